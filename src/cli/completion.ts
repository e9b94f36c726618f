/**
 * `forkpool completion bash|zsh|fish`: a shell completion script made from the program's own
 * commands, options and option choices (commander's), so it never drifts from the CLI. Install:
 * `forkpool completion bash > ~/.local/share/bash-completion/completions/forkpool`, or
 * `eval "$(forkpool completion bash)"` in a shell's rc file (zsh: `completion zsh`, through bashcompinit).
 */
import type { Command, Option } from 'commander';
import { EXIT, usageProblem } from './exit.js';

export const SHELLS = ['bash', 'zsh', 'fish'] as const;

interface CommandWords {
  name: string;
  options: string[];
  /** Option → its choices (e.g. --isolation → thread shared). */
  choices: Record<string, readonly string[]>;
}

function wordsOf(program: Command): CommandWords[] {
  return program.commands.map((command) => {
    const options: readonly Option[] = command.options;
    const choices: Record<string, readonly string[]> = {};
    for (const option of options) if (option.long && option.argChoices) choices[option.long] = option.argChoices;
    return { name: command.name(), options: [...options.flatMap((o) => [o.long, o.short].filter((f): f is string => !!f)), '--help'], choices };
  });
}

const quote = (words: readonly string[]) => words.join(' ');

function bashScript(commands: CommandWords[]): string {
  const perCommand = commands
    .map((c) => {
      const choiceCases = Object.entries(c.choices)
        .map(([option, values]) => `        ${option}) COMPREPLY=($(compgen -W "${quote(values)}" -- "$cur")); return ;;`)
        .join('\n');
      return `    ${c.name})\n      case "$prev" in\n${choiceCases}\n      esac\n      COMPREPLY=($(compgen -W "${quote(c.options)}" -- "$cur"))\n      [[ $cur == -* ]] || COMPREPLY+=($(compgen -f -- "$cur"))\n      ;;`;
    })
    .join('\n');
  return `# forkpool completion for bash (forkpool completion bash)
_forkpool() {
  local cur="\${COMP_WORDS[COMP_CWORD]}" prev="\${COMP_WORDS[COMP_CWORD-1]}"
  if (( COMP_CWORD == 1 )); then
    COMPREPLY=($(compgen -W "${quote(commands.map((c) => c.name))} --help --version" -- "$cur"))
    return
  fi
  case "\${COMP_WORDS[1]}" in
${perCommand}
  esac
}
complete -o default -F _forkpool forkpool
`;
}

function fishScript(commands: CommandWords[]): string {
  const lines = ['# forkpool completion for fish (forkpool completion fish)', 'complete -c forkpool -f'];
  for (const c of commands) {
    lines.push(`complete -c forkpool -n __fish_use_subcommand -a ${c.name}`);
    for (const option of c.options.filter((o) => o.startsWith('--'))) {
      const values = c.choices[option];
      lines.push(`complete -c forkpool -n '__fish_seen_subcommand_from ${c.name}' -l ${option.slice(2)}${values ? ` -xa '${quote(values)}'` : ''}`);
    }
  }
  return `${lines.join('\n')}\n`;
}

export function completionCommand(shell: string, program: Command): number {
  const commands = wordsOf(program);
  if (shell === 'bash') process.stdout.write(bashScript(commands));
  // zsh runs bash completion functions through bashcompinit.
  else if (shell === 'zsh') process.stdout.write(`autoload -U +X bashcompinit && bashcompinit\n${bashScript(commands)}`);
  else if (shell === 'fish') process.stdout.write(fishScript(commands));
  else return usageProblem('completion', `expects one of ${SHELLS.join(', ')}; received ${JSON.stringify(shell)}`);
  return EXIT.ok;
}

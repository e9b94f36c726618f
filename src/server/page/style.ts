/** The page's stylesheet: system fonts, readable contrast, a visible focus ring, light and dark. */
export const PAGE_CSS = `
:root { color-scheme: light dark; --fg: #1b1b1b; --bg: #fdfdfd; --muted: #5a5a5a; --line: #d4d4d4; --accent: #0b57d0; --ok: #146c2e; --bad: #b3261e; --warn: #8a5300; --partial: #6a3fb5; }
@media (prefers-color-scheme: dark) { :root { --fg: #eaeaea; --bg: #141414; --muted: #a8a8a8; --line: #3a3a3a; --accent: #8ab4f8; --ok: #6dd58c; --bad: #f2b8b5; --warn: #f0c674; --partial: #cdb8f7; } }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); }
header { display: flex; align-items: baseline; gap: 1em; padding: 0.6em 1.2em; border-bottom: 1px solid var(--line); }
h1 { font-size: 1.3em; margin: 0; }
h2 { font-size: 1.05em; margin: 1.2em 0 0.4em; }
main { padding: 0 1.2em 2em; max-width: 72em; }
#connection { margin: 0; color: var(--muted); }
#connection[data-state="live"] { color: var(--ok); }
#connection[data-state="offline"] { color: var(--bad); }
.totals { display: flex; gap: 2em; margin: 0; }
.totals div { display: flex; flex-direction: column; }
.totals dt { color: var(--muted); font-size: 0.85em; }
.totals dd { margin: 0; font-size: 1.3em; font-variant-numeric: tabular-nums; }
form { display: grid; gap: 0.3em; max-width: 40em; }
textarea, input, button { font: inherit; padding: 0.35em 0.5em; border: 1px solid var(--line); border-radius: 4px; background: transparent; color: inherit; }
button { cursor: pointer; justify-self: start; }
button:disabled { cursor: default; opacity: 0.45; }
button[type="submit"] { background: var(--accent); color: var(--bg); border-color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.hint { color: var(--muted); }
.message { min-height: 1.2em; margin: 0; color: var(--bad); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 0.3em 0.6em; border-bottom: 1px solid var(--line); vertical-align: top; }
td.num { font-variant-numeric: tabular-nums; text-align: right; }
.status { font-weight: 600; }
.status-ok { color: var(--ok); }
.status-failed, .status-timed_out, .status-error { color: var(--bad); }
.status-cancelled, .status-awaiting_approval { color: var(--warn); }
/* Partial (an answer cut short, still useful) is not cancelled (stopped, no answer): a colour of its own. */
.status-partial { color: var(--partial); }
td.id { font-family: ui-monospace, monospace; font-size: 0.9em; white-space: nowrap; }
.status-queued, .status-running, .status-deferred, .status-sleeping { color: var(--muted); }
td.actions { white-space: nowrap; }
td.actions button { padding: 0.1em 0.5em; margin-right: 0.3em; }
pre { white-space: pre-wrap; word-break: break-word; border: 1px solid var(--line); border-radius: 4px; padding: 0.6em; max-height: 24em; overflow: auto; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.2em 1em; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
.toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: 0.6em 1em; margin: 0.4em 0; }
.toolbar p { margin: 0; }
.toolbar label { display: flex; align-items: center; gap: 0.4em; }
select { font: inherit; padding: 0.3em; border: 1px solid var(--line); border-radius: 4px; background: transparent; color: inherit; }
th button.sort { border: 0; padding: 0; font-weight: 700; }
th[aria-sort="ascending"] button.sort::after { content: " \\25B2"; }
th[aria-sort="descending"] button.sort::after { content: " \\25BC"; }
tr.selected { background: color-mix(in srgb, var(--accent) 12%, transparent); }
#page-info { font-variant-numeric: tabular-nums; }
.steps { list-style: none; padding: 0; }
.steps summary { cursor: pointer; font-family: ui-monospace, monospace; white-space: pre-wrap; word-break: break-word; }
.step-tool summary { color: var(--muted); }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;

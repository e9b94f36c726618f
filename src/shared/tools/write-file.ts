import { mkdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { ToolError } from '../errors.js';
import { codeOf, displayPath, resolveInWorkspace } from './sandbox.js';
import type { ToolDefinition } from './types.js';
import { throwIfAborted } from './util.js';

const NAME = 'write_file';

const parameters = z.strictObject({
  path: z.string().min(1).describe('File to create or overwrite, relative to the workspace root. Missing parent directories are created.'),
  content: z.string().describe('The complete new content of the file (UTF-8).'),
});

export type WriteFileArgs = z.output<typeof parameters>;

export const writeFileTool: ToolDefinition<WriteFileArgs> = {
  name: NAME,
  description:
    'Create a file, or replace the whole content of an existing one, inside the workspace. ' +
    'Creates missing parent directories. For a small change to an existing file prefer edit_file.',
  parameters,
  gated: true,
  describeCall: (args) => `write ${args.path} (${Buffer.byteLength(args.content)} bytes)`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    const file = await resolveInWorkspace(ctx.workspaceRoot, args.path, NAME);
    const shown = displayPath(ctx.workspaceRoot, file);
    let existed = false;
    try {
      const info = await stat(file);
      if (info.isDirectory()) throw new ToolError('TOOL_FAILED', NAME, `${shown} is a directory; give a file path`);
      if (!info.isFile()) throw new ToolError('TOOL_FAILED', NAME, `${shown} is not a regular file; refusing to write to it`);
      existed = true;
    } catch (error) {
      if (error instanceof ToolError) throw error;
      if (codeOf(error) !== 'ENOENT') throw new ToolError('TOOL_FAILED', NAME, `cannot write ${shown}: ${codeOf(error) ?? String(error)}`, { cause: error });
    }
    try {
      // The resolved path's existing ancestors are real and inside the workspace, so the
      // directories created here are too.
      await mkdir(path.dirname(file), { recursive: true });
      throwIfAborted(ctx.signal);
      await writeFile(file, args.content, 'utf8');
    } catch (error) {
      throwIfAborted(ctx.signal);
      throw new ToolError('TOOL_FAILED', NAME, `cannot write ${shown}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    const bytes = Buffer.byteLength(args.content);
    const lines = args.content.length === 0 ? 0 : args.content.split('\n').length - (args.content.endsWith('\n') ? 1 : 0);
    return `${existed ? 'Overwrote' : 'Created'} ${shown} (${bytes} bytes, ${lines} line${lines === 1 ? '' : 's'}).`;
  },
};

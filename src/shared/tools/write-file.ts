import { z } from 'zod';
import { ToolError } from '../errors.js';
import { policyOf } from './policy.js';
import { openForWriting, overwrite } from './safe-fs.js';
import { displayPath } from './sandbox.js';
import type { ToolDefinition } from './types.js';
import { throwIfAborted } from './util.js';

const NAME = 'write_file';

const parameters = z.strictObject({
  path: z.string().min(1),
  content: z.string(),
});

export type WriteFileArgs = z.output<typeof parameters>;

export const writeFileTool: ToolDefinition<WriteFileArgs> = {
  name: NAME,
  description: 'Create or overwrite a whole file. For a small change use edit_file.',
  parameters,
  gated: true,
  describeCall: (args) => `write ${args.path} (${Buffer.byteLength(args.content)} bytes)`,
  async run(args, ctx) {
    throwIfAborted(ctx.signal);
    // Opened without following any link, protected paths refused; truncated only once open.
    const opened = await openForWriting(ctx.workspaceRoot, args.path, NAME, { create: true, policy: policyOf(ctx) });
    const shown = displayPath(ctx.workspaceRoot, opened.realPath);
    const existed = opened.existed;
    try {
      throwIfAborted(ctx.signal);
      await overwrite(opened.handle, args.content);
    } catch (error) {
      // A new file that could not be written is removed, with the folders made for it.
      await opened.handle.close();
      await opened.discard();
      throwIfAborted(ctx.signal);
      const removed = existed ? '' : '; the new file and any folders made for it were removed';
      throw new ToolError('TOOL_FAILED', NAME, `cannot write ${shown}: ${error instanceof Error ? error.message : String(error)}${removed}`, { cause: error });
    } finally {
      await opened.handle.close().catch(() => {});
    }
    const bytes = Buffer.byteLength(args.content);
    const lines = args.content.length === 0 ? 0 : args.content.split('\n').length - (args.content.endsWith('\n') ? 1 : 0);
    return `${existed ? 'Overwrote' : 'Created'} ${shown} (${bytes} bytes, ${lines} line${lines === 1 ? '' : 's'}).`;
  },
};

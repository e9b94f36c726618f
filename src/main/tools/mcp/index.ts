export { McpHub, type McpHubOptions } from './hub.js';
export type { McpServerState, McpServerStatus } from './connection.js';
export { mcpToolName } from './tool-list.js';
export { mcpServersOf, mcpToolSources, type McpToolSource } from './sources.js';
export { withProtectedMcpFiles } from './protected-files.js';

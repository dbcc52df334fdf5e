/**
 * File tools of an agent running in a workspace [docs/decisions.md "Agent file tools"]: list, read and write the
 * files of the execution's workspace, offered to the model as tools (Anthropic tool use, OpenAI function calls).
 * Every call goes through the same path rules, storage and caps as the HTTP file routes. A tool's failure the
 * model can act on (a bad path, a missing file, a cap) is answered to the model as an error result; anything else
 * (the database or the disk away) is thrown, so the activity's attempt fails and is retried.
 */
import { Readable } from 'node:stream';
import { filesDeps, writeWorkspaceFile, type FilesConfig, type FilesDeps } from './workspaceFiles';
import { AppError, ValidationError } from '../lib/errors';
import type { WorkspaceRef } from '../lib/fileStorage';
import type { ModelTool } from '../lib/providers';
import { MAX_PATH_LENGTH, parseWorkspacePath } from '../lib/workspace';

/** Most bytes of a file `read_file` returns to the model. */
export const READ_TOOL_MAX_BYTES = 64 * 1024;
/** Most entries `list_files` returns. */
export const LIST_TOOL_MAX_ENTRIES = 500;

const pathProperty = (description: string) => ({ type: 'string', maxLength: MAX_PATH_LENGTH, description });

/** The tools, as offered to the model. */
export const FILE_TOOLS: ModelTool[] = [
  {
    name: 'list_files',
    description:
      'List a directory of your workspace (your job’s files). Paths are relative to the workspace root, with / separators.',
    inputSchema: {
      type: 'object',
      properties: { path: pathProperty('The directory; empty for the workspace root') },
      additionalProperties: false,
    },
  },
  {
    name: 'read_file',
    description: `Read a text file of your workspace (at most its first ${READ_TOOL_MAX_BYTES} bytes).`,
    inputSchema: {
      type: 'object',
      properties: { path: pathProperty('The file, relative to the workspace root') },
      required: ['path'],
      additionalProperties: false,
    },
  },
  {
    name: 'write_file',
    description:
      'Write a text file in your workspace (created with its parent directories, or replaced). Use it for the artifacts of your work.',
    inputSchema: {
      type: 'object',
      properties: {
        path: pathProperty('The file, relative to the workspace root'),
        content: { type: 'string', description: 'The whole content of the file' },
      },
      required: ['path', 'content'],
      additionalProperties: false,
    },
  },
];

/** What a tool answers the model. */
export interface ToolOutcome {
  content: string;
  isError: boolean;
}

/** Runs the file tools of one workspace. */
export class AgentFileTools {
  private readonly deps: FilesDeps;

  constructor(
    config: FilesConfig,
    private readonly ws: WorkspaceRef
  ) {
    this.deps = filesDeps(config);
  }

  /**
   * Runs one tool call. Idempotent for a given input (a repeated write writes the same content again), which is
   * what crash recovery relies on for a call whose result was not recorded yet.
   * @param name the tool.
   * @param input its input as the model sent it.
   * @returns the result for the model.
   */
  async run(name: string, input: Record<string, unknown>): Promise<ToolOutcome> {
    try {
      return { content: await this.dispatch(name, input), isError: false };
    } catch (err) {
      if (err instanceof AppError && err.status < 500) return { content: err.message, isError: true };
      throw err;
    }
  }

  private async dispatch(name: string, input: Record<string, unknown>): Promise<string> {
    const str = (key: string, required: boolean): string => {
      const v = input[key];
      if (v === undefined && !required) return '';
      if (typeof v !== 'string') throw new ValidationError(`${key} must be a string`);
      return v;
    };
    const { storage } = this.deps;
    switch (name) {
      case 'list_files': {
        const rel = parseWorkspacePath(str('path', false), { allowRoot: true });
        const entries = await storage.list(this.ws, rel);
        const shown = entries
          .slice(0, LIST_TOOL_MAX_ENTRIES)
          .map((e) => ({ path: e.path, type: e.type, size: e.size }));
        return JSON.stringify({
          path: rel,
          entries: shown,
          ...(entries.length > shown.length ? { more: entries.length - shown.length } : {}),
        });
      }
      case 'read_file': {
        const rel = parseWorkspacePath(str('path', true));
        const entry = await storage.stat(this.ws, rel);
        if (!entry || entry.type !== 'file') throw new ValidationError(`No file at ${rel}`);
        const head = await storage.readHead(this.ws, rel, READ_TOOL_MAX_BYTES);
        const text = head.toString('utf8');
        return entry.size > head.length ? `${text}\n[truncated: the file has ${entry.size} bytes]` : text;
      }
      case 'write_file': {
        const rel = parseWorkspacePath(str('path', true));
        const bytes = Buffer.from(str('content', true), 'utf8');
        const done = await writeWorkspaceFile(this.deps, this.ws, rel, Readable.from([bytes]), bytes.length);
        return `${done.created ? 'Created' : 'Replaced'} ${rel} (${done.entry.size} bytes)`;
      }
      default:
        throw new ValidationError(`Unknown tool ${name}`);
    }
  }
}

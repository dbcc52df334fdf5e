/**
 * The names MCP tools are offered under and the output cap (commands/agentMcpTools.ts): pure functions.
 */
import { capOutput, mcpToolName } from '../../commands/agentMcpTools';

describe('mcpToolName', () => {
  it('is `<server>__<tool>` when that fits the providers’ rules', () => {
    expect(mcpToolName('calc', 'add')).toBe('calc__add');
    expect(mcpToolName('web-search', 'fetch_page')).toBe('web-search__fetch_page');
  });

  it('cleans and cuts a name that does not fit, ending in a hash of both names (stable, distinct)', () => {
    const dotted = mcpToolName('calc', 'math.add');
    expect(dotted).toMatch(/^calc__math_add_[0-9a-f]{8}$/);
    expect(mcpToolName('calc', 'math.add')).toBe(dotted);
    expect(mcpToolName('calc', 'math_add')).toBe('calc__math_add');
    const long = mcpToolName('a'.repeat(40), 'b'.repeat(40));
    expect(long).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    expect(long).toHaveLength(64);
    expect(mcpToolName('a'.repeat(40), 'b'.repeat(41))).not.toBe(long);
  });
});

describe('capOutput', () => {
  it('keeps a short answer and cuts a long one at the byte cap, never inside a character, saying so', () => {
    expect(capOutput('sum=5', 100)).toBe('sum=5');
    const text = 'é'.repeat(100); // 200 bytes
    const cut = capOutput(text, 51);
    expect(cut).toBe(`${'é'.repeat(25)}\n[truncated: the tool answered 200 bytes; the first 51 are shown]`);
  });
});

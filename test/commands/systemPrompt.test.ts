/**
 * composeSystemPrompt (commands/systemPrompt.ts), pure: the agent's prompt first, then each skill in the given
 * order with its framing; one budget for the skills' prompts, the first skill past it cut with a note, the ones
 * after it left out with a note; nothing dropped silently. And enabledTools (commands/builtInTools.ts): the
 * default tools with a workspace, none for the built-in model.
 */
import { BUILT_IN_TOOL_NAMES, enabledTools } from '../../commands/builtInTools';
import { composeSystemPrompt, SKILLS_PREAMBLE, SKILLS_PROMPT_BUDGET } from '../../commands/systemPrompt';

const skill = (name: string, prompt: string, extra: object = {}) => ({
  name,
  displayName: name.toUpperCase(),
  version: 1,
  description: `About ${name}`,
  prompt,
  ...extra,
});

describe('composeSystemPrompt', () => {
  it('without skills: the agent’s system prompt alone', () => {
    expect(composeSystemPrompt({ systemPrompt: 'Be brief.' }, [])).toBe('Be brief.');
  });

  it('the agent’s prompt, the preamble, then each skill framed with name, version, title and description, in order', () => {
    const out = composeSystemPrompt({ systemPrompt: 'Be brief.' }, [
      skill('web-research', 'Search, then cite.', { version: 3, displayName: 'Web "research" <beta>' }),
      skill('csv', '# CSV\nRead it first.', { description: '' }),
    ]);
    expect(out).toBe(
      'Be brief.\n\n' +
        `${SKILLS_PREAMBLE}\n\n` +
        '<skill name="web-research" version="3" title="Web &quot;research&quot; &lt;beta>">\n' +
        'Description: About web-research\n\n' +
        'Search, then cite.\n' +
        '</skill>\n\n' +
        '<skill name="csv" version="1" title="CSV">\n\n' +
        '# CSV\nRead it first.\n' +
        '</skill>'
    );
  });

  it('one budget for all prompts: the first skill past it is cut with a note, later ones left out with a note', () => {
    const out = composeSystemPrompt(
      { systemPrompt: 'S' },
      [skill('a', 'a'.repeat(600)), skill('b', 'b'.repeat(700)), skill('c', 'c'.repeat(10))],
      1000
    );
    expect(out).toContain(
      `<skill name="a" version="1" title="A">\nDescription: About a\n\n${'a'.repeat(600)}\n</skill>`
    );
    expect(out).toContain(
      `${'b'.repeat(400)}\n[The instructions of this skill are cut here: 300 of its 700 characters are left out, ` +
        'past the skills budget of 1000 characters.]\n</skill>'
    );
    expect(out).not.toContain('b'.repeat(401));
    expect(out).toContain(
      '<skill name="c" version="1" title="C">\nDescription: About c\n\n' +
        '[The instructions of this skill (10 characters) are left out: the skills budget of 1000 characters is ' +
        'spent.]\n</skill>'
    );
    expect(out.indexOf('name="a"')).toBeLessThan(out.indexOf('name="b"'));
    expect(out.indexOf('name="b"')).toBeLessThan(out.indexOf('name="c"'));
  });

  it('a skill exactly filling the budget is whole; with a stub’s room left, the next is left out, not cut', () => {
    const whole = composeSystemPrompt({ systemPrompt: 'S' }, [skill('a', 'x'.repeat(1000))], 1000);
    expect(whole).not.toContain('[The instructions');
    const stub = composeSystemPrompt(
      { systemPrompt: 'S' },
      [skill('a', 'x'.repeat(900)), skill('b', 'y'.repeat(500))],
      1000
    );
    expect(stub).not.toContain('yyy');
    expect(stub).toContain('[The instructions of this skill (500 characters) are left out');
  });

  it('never cuts between the halves of a surrogate pair', () => {
    const out = composeSystemPrompt({ systemPrompt: 'S' }, [skill('a', `${'x'.repeat(299)}😀😀`)], 300);
    expect(out).toContain(`${'x'.repeat(299)}\n[The instructions of this skill are cut here: 4 of its 303`);
  });

  it('the default budget is 40,000 characters', () => {
    expect(SKILLS_PROMPT_BUDGET).toBe(40_000);
    const out = composeSystemPrompt({ systemPrompt: 'S' }, [
      skill('a', 'x'.repeat(20_000)),
      skill('b', 'y'.repeat(20_001)),
    ]);
    expect(out).toContain('1 of its 20001 characters are left out');
  });
});

describe('enabledTools', () => {
  const names = (tools: { name: string }[]) => tools.map((t) => t.name);
  it('the file tools by default with a workspace; none without one or for a model without tool use', () => {
    expect(names(enabledTools({ toolUse: true, workspace: true, agent: {}, skills: [] }))).toEqual([
      'list_files',
      'read_file',
      'write_file',
    ]);
    expect(
      enabledTools({ toolUse: true, workspace: false, agent: { advanced_tools: ['read_file'] }, skills: [] })
    ).toEqual([]);
    expect(enabledTools({ toolUse: false, workspace: true, agent: {}, skills: [] })).toEqual([]);
    // Names outside the catalogue (stored before it was checked) change nothing.
    expect(
      names(
        enabledTools({
          toolUse: true,
          workspace: true,
          agent: { advanced_tools: ['web'] },
          skills: [{ builtInTools: ['x'] }],
        })
      )
    ).toEqual([...BUILT_IN_TOOL_NAMES]);
  });
});

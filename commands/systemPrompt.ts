/**
 * The system prompt an execution gives the model [docs/decisions.md "Skills"]: the agent's own system prompt, then
 * its skills in the agent's `skillIds` order, each framed with its name, version, title and description, its
 * Markdown prompt inside. The skills' prompts share one budget ({@link SKILLS_PROMPT_BUDGET} characters, all
 * together; the framing is outside it). The first skill that does not fit whole is cut there, with a note saying
 * how much is left out (or, with less than {@link MIN_CUT_CHARS} characters of room, left out with a note); every
 * skill after it keeps its frame and a note that its instructions are left out. Nothing is dropped silently.
 * Pure: activities/executions.ts calls it where it builds the model request.
 */

/** Characters of skill prompts one execution gives the model at most, all skills together. */
export const SKILLS_PROMPT_BUDGET = 40_000;
/** Fewer characters of room than this and a skill's prompt is left out rather than cut to a stub. */
export const MIN_CUT_CHARS = 200;

/** What of a skill the prompt shows. */
export interface PromptSkill {
  name: string;
  displayName: string;
  version: number;
  description?: string | null;
  prompt: string;
}

/** Introduces the skills to the model, after the agent's own instructions. */
export const SKILLS_PREAMBLE =
  '# Skills\n\n' +
  'You have the skills below: instructions for particular kinds of work, in order. Follow a skill when the task ' +
  'calls for it. The instructions above come first where they disagree.';

/** `s` as the value of a `name="…"` attribute of the prompt's frames (skills, attached files). */
export const attribute = (s: string): string =>
  s.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;').replace(/\n/g, ' ');

/** `text` cut to at most `n` characters, never between the two halves of a surrogate pair. */
export function cut(text: string, n: number): string {
  const end = n > 0 && /[\uD800-\uDBFF]/.test(text.charAt(n - 1)) ? n - 1 : n;
  return text.slice(0, end);
}

/**
 * @param agent the agent (its system prompt).
 * @param skills its skills, in the agent's order.
 * @param budget characters of skill prompts given at most (all skills together).
 * @returns the system prompt of the model request.
 */
export function composeSystemPrompt(
  agent: { systemPrompt: string },
  skills: readonly PromptSkill[],
  budget = SKILLS_PROMPT_BUDGET
): string {
  if (skills.length === 0) return agent.systemPrompt;
  let room = budget;
  const sections = skills.map((skill) => {
    const head =
      `<skill name="${attribute(skill.name)}" version="${skill.version}" title="${attribute(skill.displayName)}">\n` +
      (skill.description ? `Description: ${skill.description}\n` : '');
    const length = skill.prompt.length;
    let body: string;
    if (length <= room) body = skill.prompt;
    else if (room >= MIN_CUT_CHARS) {
      const kept = cut(skill.prompt, room);
      body =
        `${kept}\n[The instructions of this skill are cut here: ${length - kept.length} of its ${length} ` +
        `characters are left out, past the skills budget of ${budget} characters.]`;
    } else
      body =
        `[The instructions of this skill (${length} characters) are left out: the skills budget of ${budget} ` +
        'characters is spent.]';
    room = length <= room ? room - length : 0; // the first skill that does not fit spends the rest
    return `${head}\n${body}\n</skill>`;
  });
  return `${agent.systemPrompt}\n\n${SKILLS_PREAMBLE}\n\n${sections.join('\n\n')}`;
}

/**
 * What `docker compose` does with the project's compose file, without a Docker engine: variable interpolation as the
 * Compose specification writes it (`${X}`, `${X:-default}`, `${X-default}`, `${X:?error}`, `${X?error}`, nested
 * defaults, `$$`), applied to every service before profiles are (as compose does), and the services a set of
 * profiles starts.
 */

/** Thrown where compose refuses to start: a required variable is unset or empty. */
export class RequiredVariableError extends Error {}

/**
 * @param text a compose value.
 * @param env the interpolation environment (.env and the shell).
 * @returns the value compose hands on.
 * @throws RequiredVariableError for `${X:?…}` with X unset or empty (`${X?…}`: unset).
 */
export function interpolate(text: string, env: Record<string, string | undefined>): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    if (text.startsWith('$$', i)) {
      out += '$';
      i += 2;
    } else if (text.startsWith('${', i)) {
      // The matching brace, nested `${…}` included.
      let depth = 0;
      let end = i;
      for (; end < text.length; end++) {
        if (text.startsWith('${', end)) {
          depth++;
          end++;
        } else if (text[end] === '}' && --depth === 0) break;
      }
      if (end >= text.length) throw new Error(`unclosed \${ in ${text}`);
      out += expression(text.slice(i + 2, end), env);
      i = end + 1;
    } else if (text[i] === '$' && /[A-Za-z_]/.test(text[i + 1] ?? '')) {
      const name = /^[A-Za-z_]\w*/.exec(text.slice(i + 1))![0];
      out += env[name] ?? '';
      i += 1 + name.length;
    } else out += text[i++];
  }
  return out;
}

function expression(body: string, env: Record<string, string | undefined>): string {
  const m = /^(\w+)(?:(:?)([-?])([\s\S]*))?$/.exec(body);
  if (!m) throw new Error(`unsupported interpolation \${${body}}`);
  const [, name, colon, op, rest] = m;
  const value = env[name];
  const missing = colon ? value === undefined || value === '' : value === undefined;
  if (!op) return value ?? '';
  if (!missing) return value!;
  if (op === '-') return interpolate(rest, env);
  throw new RequiredVariableError(`required variable ${name} is missing a value: ${interpolate(rest, env)}`);
}

/**
 * @param value any part of a parsed compose file.
 * @param env the interpolation environment.
 * @returns the same structure with every string interpolated (keys stay, as compose leaves them).
 */
export function interpolateAll<T>(value: T, env: Record<string, string | undefined>): T {
  if (typeof value === 'string') return interpolate(value, env) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => interpolateAll(v, env)) as T;
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, env)])) as T;
  return value;
}

/**
 * @param services the compose file's services.
 * @param profiles the active profiles (COMPOSE_PROFILES).
 * @returns the names of the services `docker compose up` starts: those with no profile or an active one.
 */
export function activeServices(services: Record<string, { profiles?: string[] }>, profiles: string[]): string[] {
  return Object.entries(services)
    .filter(([, s]) => !s.profiles || s.profiles.some((p) => profiles.includes(p)))
    .map(([name]) => name);
}

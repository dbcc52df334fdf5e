/**
 * Model providers (docs/architecture.md §7): the interface, the three implementations, and the rules that map an
 * agent's model name onto one of them.
 *
 * Model name resolution ({@link resolveModel}), with `name = requested || config.defaultModel`:
 *
 * - no name at all (the agent names no model and DEFAULT_MODEL is unset) → the configured provider with its default
 *   model: Anthropic ({@link DEFAULT_ANTHROPIC_MODEL}) when `anthropicApiKey` is set, else OpenAI-compatible
 *   ({@link DEFAULT_OPENAI_MODEL}) when `openaiApiKey` or `openaiBaseUrl` is set, else builtin with note
 *   {@link NO_PROVIDER_NOTE}.
 * - `builtin` or `builtin:<x>` → builtin, model `builtin`.
 * - `anthropic:<m>` → anthropic, model `<m>`; a name starting with `claude` → anthropic, model = the name. Needs
 *   `anthropicApiKey`; without it → builtin with note `ANTHROPIC_API_KEY is not set`.
 * - `openai:<m>` → openai, model `<m>`; any other name → openai, model = the name. Needs `openaiApiKey` or
 *   `openaiBaseUrl`; without both → builtin with note `OPENAI_API_KEY / OPENAI_BASE_URL are not set`.
 *
 * A base address alone is enough for OpenAI-compatible local servers (Ollama, vLLM, llama.cpp take no key).
 * Falling back to the built-in model rather than failing keeps the service usable with no key at all; the note is
 * recorded on the execution so the reason is visible.
 */
import type { Config } from '../config';
import { createAnthropicProvider } from './anthropic';
import { createBuiltinProvider } from './builtin';
import { createOpenAIProvider } from './openai';
import { ProviderNotConfiguredError } from './types';
import type { ModelProvider, ResolvedModel } from './types';

export * from './types';
export { createAnthropicProvider, type AnthropicProviderOptions } from './anthropic';
export { createOpenAIProvider, type OpenAIProviderOptions } from './openai';
export { createBuiltinProvider, type BuiltinProviderOptions } from './builtin';
export { withIdleTimeout } from './idle';

/** The model name recorded for the built-in provider. */
export const BUILTIN_MODEL = 'builtin';
/** The model Anthropic answers with when neither the agent nor DEFAULT_MODEL names one. */
export const DEFAULT_ANTHROPIC_MODEL = 'claude-sonnet-5';
/** The model an OpenAI-compatible server answers with when neither the agent nor DEFAULT_MODEL names one. */
export const DEFAULT_OPENAI_MODEL = 'gpt-4.1-mini';
/** Why the built-in model answers when no provider is configured at all. */
export const NO_PROVIDER_NOTE =
  'no model provider is configured: set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENAI_BASE_URL';

/** The configuration {@link resolveModel} reads. */
export type ModelResolutionConfig = Pick<Config, 'defaultModel' | 'anthropicApiKey' | 'openaiApiKey' | 'openaiBaseUrl'>;

/** The configuration {@link createProvider} reads. */
export type ProviderConfig = Pick<Config, 'anthropicApiKey' | 'anthropicBaseUrl' | 'openaiApiKey' | 'openaiBaseUrl'>;

/**
 * Decides which provider and model serve a requested model name (rules in the module comment).
 * @param requested the agent's model name; empty or missing means the configured default.
 * @param config the keys and the default model.
 * @returns the provider, the model name to send, and a note when the built-in model is a fallback.
 */
export function resolveModel(requested: string | null | undefined, config: ModelResolutionConfig): ResolvedModel {
  const name = requested?.trim() || config.defaultModel;
  if (!name) {
    if (config.anthropicApiKey) return { provider: 'anthropic', model: DEFAULT_ANTHROPIC_MODEL };
    if (config.openaiApiKey || config.openaiBaseUrl) return { provider: 'openai', model: DEFAULT_OPENAI_MODEL };
    return { provider: 'builtin', model: BUILTIN_MODEL, note: NO_PROVIDER_NOTE };
  }

  if (name === 'builtin' || name.startsWith('builtin:')) return { provider: 'builtin', model: BUILTIN_MODEL };

  if (name.startsWith('anthropic:') || name.startsWith('claude')) {
    const model = name.startsWith('anthropic:') ? name.slice('anthropic:'.length) : name;
    if (config.anthropicApiKey) return { provider: 'anthropic', model };
    return { provider: 'builtin', model: BUILTIN_MODEL, note: 'ANTHROPIC_API_KEY is not set' };
  }

  const model = name.startsWith('openai:') ? name.slice('openai:'.length) : name;
  if (config.openaiApiKey || config.openaiBaseUrl) return { provider: 'openai', model };
  return { provider: 'builtin', model: BUILTIN_MODEL, note: 'OPENAI_API_KEY / OPENAI_BASE_URL are not set' };
}

/** One client per provider per configuration object: SDK clients hold connection pools worth reusing. */
const cache = new WeakMap<object, Map<ModelProvider['name'], ModelProvider>>();

/**
 * Returns the implementation for a resolved model, reusing the one made earlier for the same config object.
 * @param resolved the result of {@link resolveModel}.
 * @param config the keys and base addresses.
 * @returns the provider.
 * @throws ProviderNotConfiguredError (not transient) when the resolved provider's key is no longer configured.
 */
export function createProvider(resolved: ResolvedModel, config: ProviderConfig): ModelProvider {
  let perConfig = cache.get(config);
  if (perConfig === undefined) {
    perConfig = new Map();
    cache.set(config, perConfig);
  }
  let provider = perConfig.get(resolved.provider);
  if (provider === undefined) {
    provider = build(resolved.provider, config);
    perConfig.set(resolved.provider, provider);
  }
  return provider;
}

/**
 * @param name the provider to build.
 * @param config the keys and base addresses.
 * @returns a new provider.
 */
function build(name: ModelProvider['name'], config: ProviderConfig): ModelProvider {
  switch (name) {
    case 'anthropic':
      // An execution resolved earlier may run after a restart without the key: fail clearly, without retries.
      if (!config.anthropicApiKey) throw new ProviderNotConfiguredError('ANTHROPIC_API_KEY is not set');
      return createAnthropicProvider({ apiKey: config.anthropicApiKey, baseURL: config.anthropicBaseUrl });
    case 'openai':
      if (!config.openaiApiKey && !config.openaiBaseUrl) {
        throw new ProviderNotConfiguredError('OPENAI_API_KEY / OPENAI_BASE_URL are not set');
      }
      return createOpenAIProvider({ apiKey: config.openaiApiKey, baseURL: config.openaiBaseUrl });
    case 'builtin':
      return createBuiltinProvider();
  }
}

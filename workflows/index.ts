/**
 * @module workflows: every workflow of the service, bundled by the worker (deterministic code only).
 * One workflow per file; signals, queries and updates live in definitions.ts.
 */
export {};

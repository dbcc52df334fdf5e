/**
 * Jest runs every test against real servers: the global setup provisions (or reuses) the Temporal dev
 * server (tools/temporal-dev) and a MongoDB-wire-protocol server once per run; each test file gets its own database.
 * The console's own unit tests (the *.test.ts files under console/src: its pure logic, no DOM) run here too, so their counts join
 * jest's summary [docs/decisions.md "Console"]; its pages are tested in a real browser (test/console/).
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test', '<rootDir>/console/src'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { diagnostics: false }],
    // jose (JWTs of the MCP endpoint's authorization server) ships ES modules only: compiled for jest's CommonJS.
    'node_modules/jose/.+\\.js$': ['ts-jest', { diagnostics: false, tsconfig: { allowJs: true } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!jose/)'],
  globalSetup: '<rootDir>/test/globalSetup.ts',
  globalTeardown: '<rootDir>/test/globalTeardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};

/**
 * Jest runs every test against real servers: the global setup provisions (or reuses) the temporal CLI dev
 * server and a MongoDB-wire-protocol server once per run; each test file gets its own database.
 * @type {import('jest').Config}
 */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
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

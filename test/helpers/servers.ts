/** What the global setup leaves for the teardown. */
export interface TestServers {
  stop(): Promise<void>;
  dataDir: string;
}

/** Every model, so that connectMongo builds all indexes. */
export * from './Organization';
export * from './User';
export * from './Membership';
export * from './ApiToken';
export * from './Agent';
export * from './Space';
export * from './Chat';
export * from './Task';
export * from './Execution';
export * from './Session';
export * from './SessionTurn';
export * from './ChatMessage';
export * from './RateWindow';
export * from './IdempotencyRecord';
export * from './WorkspaceLink';
export * from './ServiceEvent';
export * from './WorkspaceRepo';

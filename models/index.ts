/** Every model, so that connectMongo builds all indexes. */
export * from './Organization';
export * from './User';
export * from './Membership';
export * from './ApiToken';

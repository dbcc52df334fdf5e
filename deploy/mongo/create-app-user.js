/* global db, process */
// Run once by the mongo image at the first start of an empty data volume (docker-compose.yml mounts it into
// /docker-entrypoint-initdb.d), as the root user: the service's own account, which may read and write its database
// and nothing else. Its name and password come from the compose environment (MONGO_APP_USER, MONGO_APP_PASSWORD).
db.getSiblingDB('admin').createUser({
  user: process.env.MONGO_APP_USER,
  pwd: process.env.MONGO_APP_PASSWORD,
  roles: [{ role: 'readWrite', db: 'agent_service' }],
});

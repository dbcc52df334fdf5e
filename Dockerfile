# Production image of the service (docs/operations.md "Production"): compiled JavaScript on Node 24 LTS with the production
# dependencies only. One image for every process role; docker-compose.yml picks the command of each service.
#   default command  node dist/scripts/start.js  (`npm start`: the service process under the supervisor)
#   service          node dist/worker/service.js  (HTTP and workflows)
#   api              node dist/api/server.js      (HTTP only)
#   worker           node dist/worker/index.js    (worker-only)
#   admin CLI        node dist/scripts/admin.js <command>
#   health check     node dist/scripts/healthcheck.js (api | worker)…
ARG NODE_IMAGE=node:24.19.0-bookworm-slim

# 1. Build: every dependency (TypeScript and the console's toolchain are devDependencies), compile, build the console
#    (console/dist: `npm run build` ends with it), bundle the workflow code once.
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY console/package.json ./console/
# No install scripts: compiling and bundling need none (the embedded PostgreSQL of development is not used here).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY api ./api
COPY activities ./activities
COPY commands ./commands
COPY lib ./lib
COPY models ./models
COPY presenters ./presenters
COPY scripts ./scripts
COPY worker ./worker
COPY workflows ./workflows
COPY console ./console
RUN npm run build \
  && node -e "require('./dist/scripts/lib/workflowBundle').bundleWorkflowsTo('dist/workflow-bundle.js')"

# 2. Production dependencies alone, installed from the same lock file (the console's are all devDependencies: its
#    built files need none at run time).
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY console/package.json ./console/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# 3. Runtime: git for repository clones, the compiled code, production node_modules, an unprivileged user.
FROM ${NODE_IMAGE}
RUN apt-get update \
  && apt-get install -y --no-install-recommends git ca-certificates \
  && rm -rf /var/lib/apt/lists/*
# The commit the image was built from, for GET /api/version (.git is not part of the build context):
#   docker build --build-arg GIT_COMMIT=$(git rev-parse HEAD) .   (docker-compose.yml passes GIT_COMMIT from .env)
ARG GIT_COMMIT=
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data/service \
    WORKSPACES_DIR=/data/workspaces \
    MEDIA_DIR=/data/media \
    WORKER_HEALTH_FILE=/tmp/worker-health.json \
    WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js \
    GIT_COMMIT=${GIT_COMMIT}
WORKDIR /app
COPY package.json ./
COPY --from=deps /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/console/dist ./console/dist
# The workspace and media volumes are created from these directories, so it belongs to `node` (uid 1000) like the processes.
RUN mkdir -p /data/service /data/workspaces /data/media && chown -R node:node /data
USER node
EXPOSE 3000
# The default command's health: /readyz answers 200 and every worker's health file is fresh (compose's services name
# their own check for their command).
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "dist/scripts/healthcheck.js", "api", "worker"]
CMD ["node", "dist/scripts/start.js"]

# Production image for the api and the worker (same image, different command).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
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
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
USER node
EXPOSE 3000
CMD ["node", "dist/api/server.js"]

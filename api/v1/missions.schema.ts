/**
 * JSON Schemas of /api/v1/missions: the same bodies and Mission record as the current surface's /api/missions (the
 * record keeps the spec's camelCase names on both), in the v1 envelopes (`success`, `nextCursor`).
 */
import type { Schema } from '../../lib/ajv';
import { nextCursor, record } from '../schemas';
import { missionBackfillResponse, missionSchema } from '../current/missions.schema';

export {
  missionBackfillBody,
  missionCreateBody,
  missionListQuery,
  missionUpdateBody,
} from '../current/missions.schema';

export const v1MissionBackfillResponse: Schema = record({
  success: { type: 'boolean' },
  backfill: missionBackfillResponse,
});

export const v1MissionResponse: Schema = record({ success: { type: 'boolean' }, mission: missionSchema });
export const v1MissionListResponse: Schema = record({
  success: { type: 'boolean' },
  missions: { type: 'array', items: missionSchema },
  nextCursor,
});

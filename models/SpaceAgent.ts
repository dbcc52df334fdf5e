/**
 * An agent assigned to a space when it was created (`_id` = `<spaceId>:<agentId>`): one insert per new agent
 * instead of an `$addToSet` on the space, which every concurrent create rewrote (a growing array, increments lost
 * on the embedded database) [docs/decisions.md "Space chat count and agents"]. A space's `assignedAgents` is its
 * own list (set by create and update) followed by these.
 */
import mongoose, { type InferSchemaType } from 'mongoose';

const schema = new mongoose.Schema(
  {
    _id: { type: String, required: true },
    organizationId: { type: String, required: true },
    spaceId: { type: String, required: true },
    agentId: { type: String, required: true },
  },
  { timestamps: { createdAt: true, updatedAt: false }, versionKey: false }
);
schema.index({ spaceId: 1, createdAt: 1 });

export type SpaceAgentDoc = InferSchemaType<typeof schema> & { _id: string; createdAt: Date };
export const SpaceAgent = mongoose.model('SpaceAgent', schema, 'space_agents');

/** @returns the `_id` of an agent's assignment to a space. */
export const spaceAgentId = (spaceId: string, agentId: string): string => `${spaceId}:${agentId}`;

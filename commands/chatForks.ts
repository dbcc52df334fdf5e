/**
 * Fork and rerun [docs/decisions.md "Fork and rerun"]. A fork is a new chat whose history is another chat's up to one
 * of its messages: those messages are copied into it (the original is left untouched) and its session lists their
 * completed turns as the model's history. A rerun is a new execution of an execution's message (or a changed one) in
 * a fork of its conversation just before that turn, whose stream starts with the original's steps before the chosen
 * one (commands/executionSteps.ts): the reply replays them as it replays an earlier attempt's, so no earlier tool is
 * called again and no earlier model turn is billed again.
 */
import { ConflictError, GoneError, NotFoundError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { insertDocument, insertDocumentsOnce } from '../lib/mongo';
import {
  Chat,
  ChatMessage,
  Execution,
  TERMINAL_EXECUTION_STATUSES,
  type ChatDoc,
  type ExecutionDoc,
  type ExecutionStatus,
} from '../models';
import { findChatMessage, messagesPage } from './chatMessageReads';
import { sessionFields, sessionIdOf } from './conversations';
import { findChat, sendChatMessage } from './chats';
import { EXPIRED_EVENT, readEvents } from './eventLog';
import { startExecution, type ExecutionDeps, type RerunSeed } from './executionStart';
import { stepCuts, type ExecutionStep, type StepCut } from './executionSteps';
import { findExecution } from './executions';
import type { AuthContext } from './tokens';

/** Messages copied to a query (by the chat's position index). */
const COPY_BATCH = 500;
/** Most events a stream may hold for its steps to be read (a rerun reads the whole reply). */
const MAX_STEP_EVENTS = 20_000;

/**
 * Makes a chat holding `source`'s messages up to `lastPosition` (copies, under the fork's own ids, in the same
 * positions), holding a session whose history is their completed turns. The copies are written first and the chat
 * last: a fork interrupted midway leaves no chat (the copies of a chat that never appeared are never read).
 * @param auth the caller (the fork's owner).
 * @param source the chat forked.
 * @param lastPosition the last position copied (-1: none).
 * @param forkedFrom what the fork records as its origin.
 * @returns the fork.
 */
export async function forkConversation(
  auth: AuthContext,
  source: ChatDoc,
  lastPosition: number,
  forkedFrom: { chatId: string; messageId: string; executionId?: string }
): Promise<ChatDoc> {
  const org = auth.organizationId;
  const chatId = newId('chat');
  const sessionId = sessionIdOf(chatId);
  const history: string[] = [];
  let turns = 0;
  let lastMessage: string | null = null;
  for (let after = -1; after < lastPosition;) {
    const page = await messagesPage(org, source._id, after, COPY_BATCH, lastPosition);
    if (page.length === 0) break;
    await insertDocumentsOnce(
      ChatMessage,
      page.map((m) => ({
        _id: `${chatId}:${m.position}`,
        organizationId: org,
        chatId,
        sessionId,
        // The message's execution stays the original's: the fork's history is that work.
        executionId: m.executionId,
        role: m.role,
        content: m.content,
        position: m.position,
        createdAt: m.createdAt,
      }))
    );
    for (const m of page) {
      // A turn is in the model's history when both its messages are (an answered turn: Session.history).
      if (m.role === 'assistant') history.push(m.executionId);
      turns = Math.max(turns, Math.floor(m.position / 2));
      lastMessage = m.content;
    }
    after = page[page.length - 1].position;
  }
  return (await insertDocument(Chat, {
    _id: chatId,
    organizationId: org,
    spaceId: source.spaceId,
    agentId: source.agentId,
    ownerId: auth.userId,
    title: source.title,
    lastMessage: lastMessage?.slice(0, 500) ?? null,
    status: history.length > 0 ? 'done' : 'standby',
    model: source.model ?? null,
    forkedFrom,
    // The chat holds its session (commands/conversations.ts), its history the copied turns.
    ...sessionFields(chatId, { turns, history }),
  })) as ChatDoc;
}

/**
 * Forks a chat from one of its messages. From an assistant message: the fork holds the conversation up to it. From
 * a user message: the fork holds the turns before it, and the message (or `message`, a changed one) is sent in the
 * fork at once, so its turn is answered again (edit and resend).
 * @param deps configuration and Temporal (the message sent from a user message's fork).
 * @param auth the caller.
 * @param chatId the chat forked.
 * @param input the message to fork from, and a changed user message.
 * @returns the fork and, when a message was sent in it, its execution.
 */
export async function forkChat(
  deps: ExecutionDeps,
  auth: AuthContext,
  chatId: string,
  input: { messageId: string; message?: string },
  options: { gone?: AbortSignal } = {}
): Promise<{ chat: ChatDoc; execution?: ExecutionDoc }> {
  const source = await findChat(auth, chatId);
  if (!source.agentId) throw new ConflictError('This chat has no agent: it cannot be forked');
  const from = await findChatMessage(auth.organizationId, source._id, input.messageId);
  if (!from) throw new ValidationError('Invalid message_id: no such message in this chat');
  const lineage = { chatId: source._id, messageId: from._id };
  if (from.role === 'assistant') {
    if (input.message !== undefined)
      throw new ValidationError('message is for a fork from a user message (it replaces that message)');
    return { chat: await forkConversation(auth, source, from.position, lineage) };
  }
  const chat = await forkConversation(auth, source, from.position - 1, lineage);
  const execution = await sendChatMessage(deps, auth, chat._id, input.message ?? from.content, options);
  return { chat, execution };
}

/**
 * Reads a finished execution's recorded steps (its stream must still hold them).
 * @returns the execution, and its steps each with what a rerun from it starts with.
 * @throws ConflictError while it runs; GoneError when part of its stream expired.
 */
async function recordedSteps(auth: AuthContext, executionId: string) {
  const exec = await findExecution(auth, executionId);
  return { exec, cuts: await stepsOf(exec) };
}

/**
 * @param exec an execution (found for its organization by the caller).
 * @returns its steps, each with what a rerun from it starts with (commands/executionSteps.ts `stepCuts`).
 * @throws ConflictError while it runs; GoneError when part of its stream expired.
 */
export async function stepsOf(exec: Pick<ExecutionDoc, '_id' | 'status'>): Promise<StepCut[]> {
  if (!TERMINAL_EXECUTION_STATUSES.includes(exec.status as ExecutionStatus))
    throw new ConflictError('The execution is still running: its steps are known once it has ended');
  const events = await readEvents(exec._id, 0, MAX_STEP_EVENTS);
  if (events.length >= MAX_STEP_EVENTS)
    throw new ConflictError(`This execution's stream holds more than ${MAX_STEP_EVENTS} events: too long to rerun`);
  if (events.some((e) => e.event === EXPIRED_EVENT))
    throw new GoneError('Part of this execution’s stream expired: its steps can no longer be read or rerun');
  return stepCuts(events);
}

/**
 * @param auth the caller.
 * @param executionId a finished execution of the caller's organization.
 * @returns its steps: each model turn and tool call, in order.
 */
export async function executionSteps(auth: AuthContext, executionId: string): Promise<ExecutionStep[]> {
  return (await recordedSteps(auth, executionId)).cuts.map((c) => c.step);
}

/**
 * Reruns an execution from one of its steps ({@link executionSteps}) in a fork of its conversation just before its
 * turn, with its message or a changed one.
 * @param deps configuration, Temporal and the admission.
 * @param auth the caller.
 * @param executionId the execution rerun (finished).
 * @param input the step, and a changed message.
 * @param options `gone`: aborted when the client goes away (it then leaves the line for a slot).
 * @returns the new, pending execution.
 */
export async function rerunExecution(
  deps: ExecutionDeps,
  auth: AuthContext,
  executionId: string,
  input: { fromStep: number; message?: string },
  options: { gone?: AbortSignal } = {}
): Promise<ExecutionDoc> {
  const { exec, cuts } = await recordedSteps(auth, executionId);
  const cut = cuts[input.fromStep - 1];
  if (!cut) throw new ValidationError(`Invalid fromStep: this execution has ${cuts.length} step(s)`);
  const source = await Chat.findOne({ _id: exec.chatId, organizationId: auth.organizationId }).lean<ChatDoc>();
  if (!source) throw new NotFoundError('The execution’s chat no longer exists');
  const chat = await forkConversation(auth, source, exec.turn * 2 - 1, {
    chatId: source._id,
    messageId: `${exec._id}:user`,
    executionId: exec._id,
  });
  return startExecution(
    deps,
    auth,
    exec.agentId,
    {
      message: input.message ?? exec.input?.message ?? '',
      chatId: chat._id,
      source: 'v1',
      ...(exec.input?.mediaIds?.length ? { mediaIds: exec.input.mediaIds } : {}),
      rerun: { executionId: exec._id, fromStep: input.fromStep, events: cut.seed },
    },
    options
  );
}

/**
 * What a rerun from an execution's step starts with, read again from that execution's stream (a job rerun's chosen
 * iteration: activities/jobs.ts `prepareIteration`, commands/jobReruns.ts).
 * @param executionId the execution rerun (found by id: the caller holds it for its organization).
 * @param fromStep the step.
 * @returns the seed, or a client error when the step can no longer be read (expired stream, step gone).
 */
export async function rerunSeedOf(executionId: string, fromStep: number): Promise<RerunSeed> {
  const exec = await Execution.findById(executionId).select({ status: 1 }).lean<ExecutionDoc>();
  const cut = exec ? (await stepsOf(exec))[fromStep - 1] : undefined;
  if (!cut) throw new NotFoundError('The step rerun no longer exists');
  return { executionId, fromStep, events: cut.seed };
}

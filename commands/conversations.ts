/**
 * The conversation an execution continues (a chat and its session), and the session's turn lock: one execution at a
 * time per session (docs/decisions.md "Sessions"). Used by the start of every execution (commands/executionStart.ts).
 *
 * A session's state (the execution holding it, its turns, its history, where its chat events start) is kept on its
 * chat since issue 37 (docs/decisions.md "The session on the chat"): one document written by the writes a turn makes
 * anyway. Sessions recorded before keep theirs in a `sessions` document (models/Session.ts), read and written as
 * before: {@link ConversationSession} is either, `onChat` telling which.
 */
import mongoose from 'mongoose';
import { ConflictError, NotFoundError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { isDuplicateKey, preparedInsert } from '../lib/mongo';
import {
  Chat,
  chatStatusOf,
  Execution,
  Session,
  SessionTurn,
  Space,
  TERMINAL_EXECUTION_STATUSES,
  type ChatDoc,
  type ExecutionDoc,
  type ExecutionStatus,
  type SessionDoc,
  type SessionTurnDoc,
} from '../models';
import { defaultSpaceId } from './defaultSpace';
import type { AuthContext } from './tokens';

/** Which conversation an execution names: a chat, a session, or a space to open a new one in (none: the default). */
export interface ConversationRef {
  chatId?: string;
  sessionId?: string;
  spaceId?: string;
}

/** A session as the start of an execution sees it, on its chat or in a `sessions` document. */
export interface ConversationSession {
  _id: string;
  chatId: string;
  activeExecutionId: string | null;
  /** Number of turns started. */
  turns: number;
  chatStreamSeq: number;
  /** The state is on the chat (models/Chat.ts); false: a `sessions` document (recorded before). */
  onChat: boolean;
  /** A chat's session that has no state yet (a chat made with its agent, before its first message). */
  unset?: boolean;
}

/**
 * @param chat a chat.
 * @returns whether it holds its session's state (recorded since issue 37).
 */
export const holdsSession = (chat: Pick<ChatDoc, 'turns'>): boolean => typeof chat.turns === 'number';

/**
 * The id of the session a chat holds: derived from the chat's, so that an execution naming only a `sessionId` finds
 * its chat by `_id` (no index of its own).
 * @param chatId the chat.
 * @returns `ses_<chatId>` (the form the sessions of chats made with their agents had already).
 */
export const sessionIdOf = (chatId: string): string => `ses_${chatId}`;

/**
 * The fields of a chat that holds its session, for its insert.
 * @param chatId the chat.
 * @param state the session's first state (default: free, no turn yet, no history).
 * @returns the fields.
 */
export function sessionFields(
  chatId: string,
  state: { activeExecutionId?: string | null; turns?: number; history?: string[] } = {}
): Record<string, unknown> {
  return {
    sessionId: sessionIdOf(chatId),
    activeExecutionId: state.activeExecutionId ?? null,
    turns: state.turns ?? 0,
    history: state.history ?? [],
    chatStreamSeq: 0,
  };
}

const onChat = (chat: ChatDoc): ConversationSession => ({
  _id: chat.sessionId!,
  chatId: chat._id,
  activeExecutionId: chat.activeExecutionId ?? null,
  turns: chat.turns ?? 0,
  chatStreamSeq: chat.chatStreamSeq ?? 0,
  onChat: true,
});
const stored = (s: SessionDoc): ConversationSession => ({
  _id: s._id,
  chatId: s.chatId,
  activeExecutionId: s.activeExecutionId ?? null,
  turns: s.turns,
  chatStreamSeq: s.chatStreamSeq ?? 0,
  onChat: false,
});

/**
 * A session by its id, in either shape: on the chat its id derives from, else a `sessions` document.
 * @param organizationId the caller's organization.
 * @param sessionId the session.
 * @returns the session, and its chat when it is on it; null when there is none.
 */
async function findSession(
  organizationId: string,
  sessionId: string
): Promise<{ session: ConversationSession; chat?: ChatDoc } | null> {
  if (sessionId.startsWith('ses_chat_')) {
    const chat = await Chat.findOne({ _id: sessionId.slice('ses_'.length), organizationId }).lean<ChatDoc>();
    if (chat && holdsSession(chat) && chat.sessionId === sessionId) return { session: onChat(chat), chat };
  }
  const doc = await Session.findOne({ _id: sessionId, organizationId }).lean<SessionDoc>();
  return doc ? { session: stored(doc) } : null;
}

/**
 * Finds the conversation an execution continues, or opens a new one. A new one is a chat created already held by
 * the execution (`activeExecutionId`, turn 1), so a new conversation is one insert and needs no lock round trip. That
 * insert is not sent here: it is returned (`insertChat`) for the caller to send beside the execution's record.
 * @param defaultSpace the default space id when the caller already looked it up (a new conversation names none).
 * @returns the chat and its session, whether the session still has to be locked ({@link takeTurn}), and whether the
 *   chat was created here (then already showing its execution's status: `working`).
 */
export async function resolveConversation(
  auth: AuthContext,
  agentId: string,
  agentName: string,
  executionId: string,
  input: ConversationRef,
  defaultSpace?: string
): Promise<{
  chat: ChatDoc;
  session: ConversationSession;
  needsLock: boolean;
  createdChat?: boolean;
  insertChat?: () => Promise<void>;
}> {
  const org = auth.organizationId;
  if (input.chatId !== undefined) {
    const chat = await Chat.findOne({ _id: input.chatId, organizationId: org }).lean<ChatDoc>();
    if (!chat) throw new NotFoundError('Chat not found');
    if (input.sessionId !== undefined && input.sessionId !== chat.sessionId) {
      const other = await findSession(org, input.sessionId);
      if (!other) throw new NotFoundError('Session not found');
      if (other.session.chatId !== chat._id) throw new ValidationError('sessionId does not belong to chatId');
      return { chat, session: other.session, needsLock: true };
    }
    if (holdsSession(chat)) return { chat, session: onChat(chat), needsLock: true };
    const doc = chat.sessionId
      ? await Session.findOne({ _id: chat.sessionId, organizationId: org }).lean<SessionDoc>()
      : null;
    if (doc) return { chat, session: stored(doc), needsLock: true };
    // A chat without a session yet (the one created with its agent): its session goes on it, under the id derived
    // from the chat's, its first turn claimed like any other (of two first messages at once, one is refused).
    const session = { ...onChat({ ...chat, sessionId: sessionIdOf(chat._id) }), unset: true };
    return { chat, session, needsLock: true };
  }
  if (input.sessionId !== undefined) {
    const found = await findSession(org, input.sessionId);
    if (!found) throw new NotFoundError('Session not found');
    const chat = found.chat ?? (await Chat.findOne({ _id: found.session.chatId, organizationId: org }).lean<ChatDoc>());
    if (!chat) throw new NotFoundError('Chat not found');
    return { chat, session: found.session, needsLock: true };
  }
  let spaceId: string;
  if (input.spaceId !== undefined) {
    const space = await Space.findOne({ _id: input.spaceId, organizationId: org, deletedAt: null }).lean();
    if (!space || (space.visibility === 'private' && space.ownerId !== auth.userId)) {
      throw new ValidationError('Invalid spaceId: space not found');
    }
    spaceId = space._id;
  } else {
    spaceId = defaultSpace ?? (await defaultSpaceId(auth));
  }
  // One insert: the chat, holding its session already taken by the execution, and showing the execution's status
  // (pending: `working`), so the reply does not write it again when it starts. Sent by the caller.
  const chatId = newId('chat');
  const prepared = await preparedInsert(Chat, {
    _id: chatId,
    organizationId: org,
    spaceId,
    agentId,
    ownerId: auth.userId,
    title: agentName,
    status: chatStatusOf('pending'),
    ...sessionFields(chatId, { activeExecutionId: executionId, turns: 1 }),
  });
  const chat = prepared.doc as ChatDoc;
  return { chat, session: onChat(chat), needsLock: false, createdChat: true, insertChat: prepared.insert };
}

/** A turn claim older than this whose session never became busy belongs to a request that died in between. */
const STALE_TURN_CLAIM_MS = 60_000;

/**
 * Claims the session's next turn by inserting its unique id (the one exclusive write on both servers:
 * models/SessionTurn.ts). A claim left by a request that died before marking the session busy (the session, read
 * just before, is still at that turn and idle) is taken over once it is a minute old.
 * @param organizationId the caller's organization.
 * @param session the session as just read (idle).
 * @param executionId the execution that wants the turn.
 * @returns the claim's id, or null when another request holds the turn.
 */
async function claimTurn(
  organizationId: string,
  session: ConversationSession,
  executionId: string
): Promise<string | null> {
  const turnId = `${session._id}:${session.turns + 1}`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await SessionTurn.create({ _id: turnId, organizationId, executionId });
      return turnId;
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
      const claim = await SessionTurn.findById(turnId).lean<SessionTurnDoc>();
      if (claim && Date.now() - claim.createdAt.getTime() < STALE_TURN_CLAIM_MS) return null;
      if (claim) await SessionTurn.deleteOne({ _id: turnId, executionId: claim.executionId });
    }
  }
  return null;
}
const busy = (): ConflictError =>
  new ConflictError('Session is busy: an execution is still running in it; wait for it to finish or cancel it');

/** What a take-over reads of the execution that holds a chat. */
type EndedHolder = Pick<ExecutionDoc, '_id' | 'status' | 'result' | 'source' | 'error' | 'chatSeqBase' | 'streamSeq'>;

/**
 * The execution holding a chat's session, when it has ended: its outcome is written, and only its finish's last
 * write, which frees the chat, is still to come (or will never come, its worker dead in between: the retried finish
 * then finds the chat taken and leaves it). A session recorded before is freed before its outcome is written: never
 * taken over.
 * @param session the session, held.
 * @returns the holder if it has ended; null otherwise (the session is busy).
 */
async function endedHolder(session: ConversationSession): Promise<EndedHolder | null> {
  if (!session.onChat || !session.activeExecutionId) return null;
  const holder = await Execution.findById(session.activeExecutionId)
    .select({ status: 1, result: 1, source: 1, error: 1, chatSeqBase: 1, streamSeq: 1 })
    .lean<EndedHolder>();
  return holder && TERMINAL_EXECUTION_STATUSES.includes(holder.status as ExecutionStatus) ? holder : null;
}

/**
 * The take-over of a chat from an ended execution: what its finish's release would write (activities/
 * executionFinish.ts: a completed reply joins the history, becomes the chat's last message, and a reply that mirrors
 * its events to the chat's stream ends its range there: activities/chatStream.ts `chatRangeEnd`, its stream's head
 * being its last event once the outcome is written), and the turn taken.
 * @param ended the ended holder.
 * @param executionId the execution that takes the turn.
 * @returns the update.
 */
function takeOverUpdate(ended: EndedHolder, executionId: string): mongoose.UpdateQuery<ChatDoc> {
  const completed = ended.status === 'completed';
  const mirrors = (ended.source === 'chat' || ended.source === 'job') && ended.error?.code !== 'start_failed';
  return {
    $set: {
      activeExecutionId: executionId,
      ...(completed && ended.result ? { lastMessage: ended.result.slice(0, 500) } : {}),
      ...(mirrors ? { chatStreamSeq: (ended.chatSeqBase ?? 0) + 1 + (ended.streamSeq ?? 0) } : {}),
    },
    $inc: { turns: 1 },
    ...(completed ? { $addToSet: { history: ended._id } } : {}),
  };
}

/**
 * Marks a session busy with an execution, its turn claimed: on its chat (a chat without state yet gets it now, at
 * turn 1), or in its `sessions` document.
 * @returns the session as it is now, or null when another execution holds it.
 */
async function lockSession(
  organizationId: string,
  session: ConversationSession,
  executionId: string,
  ended?: EndedHolder
): Promise<ConversationSession | null> {
  if (ended) {
    const chat = await Chat.findOneAndUpdate(
      { _id: session.chatId, organizationId, activeExecutionId: ended._id },
      takeOverUpdate(ended, executionId),
      { new: true }
    ).lean<ChatDoc>();
    return chat ? onChat(chat) : null;
  }
  if (!session.onChat) {
    const doc = await Session.findOneAndUpdate(
      { _id: session._id, organizationId, activeExecutionId: null },
      { $set: { activeExecutionId: executionId }, $inc: { turns: 1 } },
      { new: true }
    ).lean<SessionDoc>();
    return doc ? stored(doc) : null;
  }
  const chat = await (
    session.unset
      ? Chat.findOneAndUpdate(
          { _id: session.chatId, organizationId, turns: mongoose.trusted({ $exists: false }) },
          { $set: sessionFields(session.chatId, { activeExecutionId: executionId, turns: 1 }) },
          { new: true }
        )
      : Chat.findOneAndUpdate(
          { _id: session.chatId, organizationId, activeExecutionId: null },
          { $set: { activeExecutionId: executionId }, $inc: { turns: 1 } },
          { new: true }
        )
  ).lean<ChatDoc>();
  return chat ? onChat(chat) : null;
}

/**
 * Takes an existing session's next turn for an execution: the turn's claim ({@link claimTurn}), then the session
 * marked busy with it.
 * @param organizationId the caller's organization.
 * @param session the session as just read.
 * @param executionId the execution that wants the turn.
 * @returns the session, now held by the execution.
 * @throws ConflictError when another execution holds the session.
 */
export async function takeTurn(
  organizationId: string,
  session: ConversationSession,
  executionId: string
): Promise<ConversationSession> {
  const ended = session.activeExecutionId ? await endedHolder(session) : undefined;
  if (ended === null) throw busy();
  const turnId = await claimTurn(organizationId, session, executionId);
  if (!turnId) throw busy();
  const unclaim = (): Promise<unknown> => SessionTurn.deleteOne({ _id: turnId, executionId }).catch(() => undefined);
  const locked = await lockSession(organizationId, session, executionId, ended).catch(async (err: unknown) => {
    await unclaim();
    throw err;
  });
  if (!locked) {
    await unclaim();
    throw busy();
  }
  return locked;
}

/**
 * Gives the session back when the execution that took it never starts; a chat created for it goes back to the status
 * it had before (the default).
 */
export function releaseTurn(
  chat: ChatDoc,
  session: ConversationSession,
  executionId: string,
  createdChat: boolean
): Promise<unknown> {
  const standby = createdChat ? { status: 'standby' } : {};
  if (session.onChat)
    return Chat.updateOne(
      { _id: chat._id, activeExecutionId: executionId },
      { $set: { activeExecutionId: null, ...standby } }
    );
  return Promise.all([
    Session.updateOne({ _id: session._id, activeExecutionId: executionId }, { $set: { activeExecutionId: null } }),
    createdChat ? Chat.updateOne({ _id: chat._id }, { $set: standby }) : undefined,
  ]);
}

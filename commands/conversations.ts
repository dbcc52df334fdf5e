/**
 * The conversation an execution continues (a chat and its session), and the session's turn lock: one execution at a
 * time per session (docs/decisions.md "Sessions"). Used by the start of every execution (commands/executionStart.ts).
 */
import { ConflictError, NotFoundError, ValidationError } from '../lib/errors';
import { newId } from '../lib/ids';
import { insertDocument, isDuplicateKey } from '../lib/mongo';
import {
  Chat,
  chatStatusOf,
  Session,
  SessionTurn,
  Space,
  type ChatDoc,
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

/**
 * Finds the conversation an execution continues, or opens a new one. A session created here is created already
 * held by the execution (`activeExecutionId`, turn 1), so a new conversation needs no lock round trip.
 * @param defaultSpace the default space id when the caller already looked it up (a new conversation names none).
 * @returns the chat and the session, whether the session still has to be locked ({@link takeTurn}), and whether the
 *   chat was created here (then already showing its execution's status: `working`).
 */
export async function resolveConversation(
  auth: AuthContext,
  agentId: string,
  agentName: string,
  executionId: string,
  input: ConversationRef,
  defaultSpace?: string
): Promise<{ chat: ChatDoc; session: SessionDoc; needsLock: boolean; createdChat?: boolean }> {
  const org = auth.organizationId;
  const newSession = (chatId: string, sessionId = newId('ses')): Promise<SessionDoc> =>
    insertDocument(Session, {
      _id: sessionId,
      organizationId: org,
      chatId,
      agentId,
      activeExecutionId: executionId,
      turns: 1,
    }) as Promise<SessionDoc>;
  if (input.chatId !== undefined) {
    const chat = await Chat.findOne({ _id: input.chatId, organizationId: org }).lean<ChatDoc>();
    if (!chat) throw new NotFoundError('Chat not found');
    let session = chat.sessionId
      ? await Session.findOne({ _id: chat.sessionId, organizationId: org }).lean<SessionDoc>()
      : null;
    if (input.sessionId !== undefined && session?._id !== input.sessionId) {
      const other = await Session.findOne({ _id: input.sessionId, organizationId: org }).lean<SessionDoc>();
      if (!other) throw new NotFoundError('Session not found');
      if (other.chatId !== chat._id) throw new ValidationError('sessionId does not belong to chatId');
      session = other;
    }
    if (session) return { chat, session, needsLock: true };
    // A chat without a session yet (the one created with its agent): its first execution opens the session.
    const created = await newSession(chat._id);
    await Chat.updateOne({ _id: chat._id, organizationId: org }, { $set: { sessionId: created._id } });
    return { chat: { ...chat, sessionId: created._id }, session: created, needsLock: false };
  }
  if (input.sessionId !== undefined) {
    const session = await Session.findOne({ _id: input.sessionId, organizationId: org }).lean<SessionDoc>();
    if (!session) throw new NotFoundError('Session not found');
    const chat = await Chat.findOne({ _id: session.chatId, organizationId: org }).lean<ChatDoc>();
    if (!chat) throw new NotFoundError('Chat not found');
    return { chat, session, needsLock: true };
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
  // Both ids are made here, so the chat and its session are written together. The chat is created showing its
  // execution's status (pending: `working`), so the reply does not write it again when it starts.
  const chatId = newId('chat');
  const sessionId = newId('ses');
  const [chat, session] = await Promise.all([
    insertDocument(Chat, {
      _id: chatId,
      organizationId: org,
      spaceId,
      agentId,
      ownerId: auth.userId,
      title: agentName,
      sessionId,
      status: chatStatusOf('pending'),
    }) as Promise<ChatDoc>,
    newSession(chatId, sessionId),
  ]);
  return { chat, session, needsLock: false, createdChat: true };
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
async function claimTurn(organizationId: string, session: SessionDoc, executionId: string): Promise<string | null> {
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

/**
 * Takes an existing session's next turn for an execution: the turn's claim ({@link claimTurn}), then the session
 * marked busy with it.
 * @param organizationId the caller's organization.
 * @param session the session as just read.
 * @param executionId the execution that wants the turn.
 * @returns the session, now held by the execution.
 * @throws ConflictError when another execution holds the session.
 */
export async function takeTurn(organizationId: string, session: SessionDoc, executionId: string): Promise<SessionDoc> {
  if (session.activeExecutionId) throw busy();
  const turnId = await claimTurn(organizationId, session, executionId);
  if (!turnId) throw busy();
  const unclaim = (): Promise<unknown> => SessionTurn.deleteOne({ _id: turnId, executionId }).catch(() => undefined);
  const locked = await Session.findOneAndUpdate(
    { _id: session._id, organizationId, activeExecutionId: null },
    { $set: { activeExecutionId: executionId }, $inc: { turns: 1 } },
    { new: true }
  )
    .lean<SessionDoc>()
    .catch(async (err: unknown) => {
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
  session: SessionDoc,
  executionId: string,
  createdChat: boolean
): Promise<unknown> {
  return Promise.all([
    Session.updateOne({ _id: session._id, activeExecutionId: executionId }, { $set: { activeExecutionId: null } }),
    createdChat ? Chat.updateOne({ _id: chat._id }, { $set: { status: 'standby' } }) : undefined,
  ]);
}

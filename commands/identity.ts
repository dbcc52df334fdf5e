/**
 * Who an identity provider's ID token stands for (docs/identity.md; docs/decisions.md "Identity providers (issue
 * 43)"), by one rule, in this order:
 *   1. an identity link (`admin link-identity --issuer --subject --user`): the token's `iss` and `sub` name a member
 *      of the link's organization;
 *   2. else its `email`, when `email_verified` is true, in an email domain an organization has verified
 *      (`admin domain add`), for that domain's issuer (or any configured one): the organization's member with that
 *      email.
 * Anything else is unmapped (401 `identity_unmapped`). The caller acts with the user's permissions in that one
 * organization, as a personal token does (no scope restriction, `kind: 'v1'`).
 */
import { createHash } from 'node:crypto';
import type { IdTokenClaims } from '../lib/oidc';
import { NotFoundError, ValidationError } from '../lib/errors';
import { isDuplicateKey } from '../lib/mongo';
import { IdentityDomain, IdentityLink, Membership, Organization, User, type IdentityLinkDoc } from '../models';
import { memberContext, type AuthContext } from './tokens';

/** The domains `admin domain add` takes: lowercase labels of letters, digits and hyphens, at least two. */
const DOMAIN = /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$/;

/**
 * @param issuer the token's `iss`.
 * @param subject the token's `sub`.
 * @returns what identifies the caller's credential (`tokenId`): `sso:` + a hash of issuer and subject.
 */
export function identityTokenId(issuer: string, subject: string): string {
  return `sso:${createHash('sha256').update(`${issuer}\n${subject}`).digest('hex').slice(0, 32)}`;
}

/**
 * Maps a verified ID token to a member.
 * @param claims the verified claims.
 * @returns the caller, or null when no member matches.
 */
export async function identityContext(claims: IdTokenClaims): Promise<AuthContext | null> {
  const tokenId = identityTokenId(claims.iss, claims.sub);
  const link = await IdentityLink.findOne({ issuer: claims.iss, subject: claims.sub }).lean<IdentityLinkDoc>();
  if (link) return memberContext(link.organizationId, link.userId, tokenId, [], 'v1');
  if (claims.email_verified !== true || typeof claims.email !== 'string') return null;
  const email = claims.email.trim().toLowerCase();
  const at = email.lastIndexOf('@');
  if (at < 1 || email.length > 320) return null;
  const domain = await IdentityDomain.findById(email.slice(at + 1)).lean();
  if (!domain || (domain.issuer !== null && domain.issuer !== claims.iss)) return null;
  const user = await User.findOne({ email }).select({ _id: 1 }).lean();
  if (!user) return null;
  return memberContext(domain.organizationId, user._id, tokenId, [], 'v1');
}

/**
 * Links an identity at a provider to a member (admin CLI `link-identity`); linking it again moves it.
 * @param input the provider's issuer and the identity's subject, the user, and the organization (optional when the
 *   user is a member of one organization only).
 * @returns the link.
 */
export async function linkIdentity(input: {
  issuer: string;
  subject: string;
  userId: string;
  organizationId?: string;
}): Promise<{ issuer: string; subject: string; userId: string; organizationId: string }> {
  const memberships = await Membership.find({
    userId: input.userId,
    ...(input.organizationId ? { organizationId: input.organizationId } : {}),
  })
    .select({ organizationId: 1 })
    .limit(2)
    .lean();
  if (memberships.length === 0) throw new NotFoundError('User is not a member of this organization');
  if (memberships.length > 1)
    throw new ValidationError('The user is a member of several organizations: name one with --org');
  const organizationId = memberships[0].organizationId;
  await IdentityLink.updateOne(
    { issuer: input.issuer, subject: input.subject },
    { $set: { userId: input.userId, organizationId } },
    { upsert: true }
  );
  return { issuer: input.issuer, subject: input.subject, userId: input.userId, organizationId };
}

/**
 * Removes an identity link (admin CLI `unlink-identity`).
 * @returns whether there was one.
 */
export async function unlinkIdentity(issuer: string, subject: string): Promise<boolean> {
  return (await IdentityLink.deleteOne({ issuer, subject })).deletedCount > 0;
}

/**
 * Records an email domain as verified by an organization (admin CLI `domain add`): the operator has checked that
 * the organization controls it. A domain belongs to one organization at most.
 * @param input the organization, the domain, and optionally the only issuer whose emails count for it.
 * @returns the domain's record.
 */
export async function addIdentityDomain(input: {
  organizationId: string;
  domain: string;
  issuer?: string;
}): Promise<{ domain: string; organizationId: string; issuer: string | null }> {
  const domain = input.domain.trim().toLowerCase();
  if (!DOMAIN.test(domain)) throw new ValidationError(`${input.domain} is not a domain name such as example.com`);
  const issuer = input.issuer ?? null;
  if (!(await Organization.exists({ _id: input.organizationId }))) throw new NotFoundError('Organization not found');
  const taken = await IdentityDomain.findById(domain).lean();
  if (taken && taken.organizationId !== input.organizationId)
    throw new ValidationError(`${domain} is verified by another organization`);
  try {
    await IdentityDomain.updateOne(
      { _id: domain, organizationId: input.organizationId },
      { $set: { issuer } },
      { upsert: true }
    );
  } catch (err) {
    // Two organizations adding the same domain at once: the _id keeps one.
    if (isDuplicateKey(err)) throw new ValidationError(`${domain} is verified by another organization`);
    throw err;
  }
  return { domain, organizationId: input.organizationId, issuer };
}

/**
 * Removes an organization's verified domain (admin CLI `domain remove`).
 * @returns whether it was there.
 */
export async function removeIdentityDomain(organizationId: string, domain: string): Promise<boolean> {
  return (await IdentityDomain.deleteOne({ _id: domain.trim().toLowerCase(), organizationId })).deletedCount > 0;
}

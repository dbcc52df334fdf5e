/**
 * /api/budgets: an organization's spending caps (docs/spend.md; commands/budgets.ts), and the cost ledger of one
 * execution (`GET /api/usage/executions/{id}`). Schemas: budgets.schema.ts.
 */
import { budgetSpend, createBudget, deleteBudget, findBudget, listBudgets, updateBudget } from '../../commands/budgets';
import type { BudgetState } from '../../commands/spend';
import { executionLedger } from '../../commands/usage';
import type { BudgetDoc } from '../../models';
import { presentBudget, presentLedgerEntry } from '../../presenters/budget';
import type { AppDeps } from '../deps';
import { route, type RouteSpec } from '../route';
import { idParams } from '../schemas';
import {
  budgetCreateBody,
  budgetDeletedResponse,
  budgetListResponse,
  budgetPatchBody,
  budgetResponse,
  executionLedgerResponse,
} from './budgets.schema';

const tags = ['Budgets'];

/** @returns a budget's public shape with what it counts now. */
const present = (b: BudgetDoc, states: Map<string, BudgetState>): Record<string, unknown> => {
  const s = states.get(b._id);
  return presentBudget(b, b.period === 'run' || !s ? undefined : b.unit === 'usd' ? s.spent.usd : s.spent.tokens);
};

/**
 * @param deps app dependencies.
 * @returns the route declarations.
 */
export function budgetRoutes(deps: AppDeps): RouteSpec[] {
  return [
    route({
      method: 'get',
      path: '/budgets',
      summary: 'The organization’s budgets, each with what it counts in its current period',
      tags,
      auth: 'service',
      scope: 'budgets:read',
      responses: { 200: budgetListResponse },
      handler: async (ctx) => {
        const docs = await listBudgets(ctx.state.auth);
        const states = await budgetSpend(deps.config, docs);
        ctx.body = { budgets: docs.map((b) => present(b, states)) };
      },
    }),
    route({
      method: 'post',
      path: '/budgets',
      summary: 'Set a cap on spend: organization, agent or mission; per day, month or run; in tokens or USD',
      tags,
      auth: 'service',
      scope: 'budgets:write',
      body: budgetCreateBody,
      responses: { 201: budgetResponse },
      handler: async (ctx, { body }) => {
        const doc = await createBudget(ctx.state.auth, {
          name: body.name,
          scope: body.scope,
          targetId: body.target_id,
          period: body.period,
          unit: body.unit,
          limit: body.limit,
        });
        ctx.status = 201;
        ctx.body = { budget: present(doc, await budgetSpend(deps.config, [doc])) };
      },
    }),
    route({
      method: 'get',
      path: '/budgets/:id',
      summary: 'One budget with what it counts in its current period',
      tags,
      auth: 'service',
      scope: 'budgets:read',
      params: idParams,
      responses: { 200: budgetResponse },
      handler: async (ctx, { params }) => {
        const doc = await findBudget(ctx.state.auth, params.id);
        ctx.body = { budget: present(doc, await budgetSpend(deps.config, [doc])) };
      },
    }),
    route({
      method: 'patch',
      path: '/budgets/:id',
      summary: 'Rename a budget or change its limit (work it paused resumes once no budget covering it is spent)',
      tags,
      auth: 'service',
      scope: 'budgets:write',
      params: idParams,
      body: budgetPatchBody,
      responses: { 200: budgetResponse },
      handler: async (ctx, { params, body }) => {
        const doc = await updateBudget(deps, ctx.state.auth, params.id, body);
        ctx.body = { budget: present(doc, await budgetSpend(deps.config, [doc])) };
      },
    }),
    route({
      method: 'delete',
      path: '/budgets/:id',
      summary: 'Remove a budget (work it paused resumes once no budget covering it is spent)',
      tags,
      auth: 'service',
      scope: 'budgets:write',
      params: idParams,
      responses: { 200: budgetDeletedResponse },
      handler: async (ctx, { params }) => {
        await deleteBudget(deps, ctx.state.auth, params.id);
        ctx.body = { id: params.id, deleted: true };
      },
    }),
    route({
      method: 'get',
      path: '/usage/executions/:id',
      summary: 'The cost ledger of one execution: its model calls, and its total with its sub-agents’',
      tags: ['Usage'],
      auth: 'client',
      scope: 'usage:read',
      params: idParams,
      responses: { 200: executionLedgerResponse },
      handler: async (ctx, { params }) => {
        const l = await executionLedger(ctx.state.auth, params.id);
        ctx.body = {
          execution_id: l.execution._id,
          entries: l.entries.map(presentLedgerEntry),
          own: l.own,
          total: l.total,
        };
      },
    }),
  ];
}

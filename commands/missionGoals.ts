/**
 * The goals of the jobs a mission makes: a job working on one of its tasks (commands/missions.ts `startTaskWork`)
 * and the job of a scheduled run, which lists the mission's open tasks (activities/missions.ts).
 */
import { Task, type MissionDoc, type TaskDoc } from '../models';

/**
 * @param mission the mission.
 * @param task one of its tasks.
 * @returns the goal of a job working on the task.
 */
export function taskGoal(mission: Pick<MissionDoc, 'goal'>, task: Pick<TaskDoc, 'title' | 'description'>): string {
  return `${mission.goal}\n\nTask: ${task.title}${task.description ? `\n${task.description}` : ''}`;
}

/**
 * @param mission the mission.
 * @param tasks its open tasks (pending or in progress), oldest first.
 * @returns the goal of a mission run's job.
 */
export function missionRunGoal(mission: Pick<MissionDoc, 'goal'>, tasks: Pick<TaskDoc, 'title' | 'status'>[]): string {
  if (tasks.length === 0) return mission.goal;
  return `${mission.goal}\n\nOpen tasks:\n${tasks.map((t) => `- ${t.title} (${t.status})`).join('\n')}`;
}

/** Open tasks a mission run lists in its job's goal, at most. */
export const MISSION_RUN_TASKS = 100;

/**
 * @param organizationId the mission's organization.
 * @param missionId the mission.
 * @returns its open tasks, oldest first (at most MISSION_RUN_TASKS).
 */
export async function openMissionTasks(organizationId: string, missionId: string): Promise<TaskDoc[]> {
  const tasks = await Task.find({ organizationId, missionId })
    .sort({ createdAt: -1, _id: -1 })
    .limit(1000)
    .lean<TaskDoc[]>();
  return tasks
    .filter((t) => t.status === 'pending' || t.status === 'in_progress')
    .reverse()
    .slice(0, MISSION_RUN_TASKS);
}

/** A job's related work (GET /api/jobs/{id}/lineage): its parent and child jobs, its iterations' executions, its mission. */
import { Alert, Anchor, List, Loader, Stack, Text, Title } from '@mantine/core';
import { useQuery } from '@tanstack/react-query';
import { useId } from 'react';
import { Link } from 'react-router';
import { jobKeys, readLineage } from '../api/jobs';
import { statusLabel } from '../lib/jobActions';

const jobLink = (j: { id: string; title: string; status: string }) => (
  <>
    <Anchor component={Link} to={`/jobs/${encodeURIComponent(j.id)}`} style={{ overflowWrap: 'anywhere' }}>
      {j.title}
    </Anchor>{' '}
    ({statusLabel(j.status)})
  </>
);

export function JobLineage({ jobId }: { jobId: string }) {
  const headingId = useId();
  const lineage = useQuery({ queryKey: jobKeys.lineage(jobId), queryFn: () => readLineage(jobId) });
  return (
    <section aria-labelledby={headingId}>
      <Title order={2} size="h4" id={headingId} mb="xs">
        Lineage
      </Title>
      {lineage.isPending && <Loader size="sm" aria-label="Loading the lineage" />}
      {lineage.isError && (
        <Alert color="red" role="alert">
          {lineage.error.message}
        </Alert>
      )}
      {lineage.data && (
        <Stack gap={4}>
          <Text size="sm">Parent job: {lineage.data.parent ? jobLink(lineage.data.parent) : 'none'}</Text>
          {lineage.data.children.length === 0 ? (
            <Text size="sm">Child jobs: none</Text>
          ) : (
            <>
              <Text size="sm">Child jobs:</Text>
              <List size="sm" aria-label="Child jobs">
                {lineage.data.children.map((c) => (
                  <List.Item key={c.id}>{jobLink(c)}</List.Item>
                ))}
              </List>
            </>
          )}
          {lineage.data.mission_run && (
            <Text size="sm">
              Started by mission{' '}
              <Anchor component={Link} to={`/missions/${encodeURIComponent(lineage.data.mission_run.mission_id)}`}>
                {lineage.data.mission_run.mission_id}
              </Anchor>
            </Text>
          )}
          {lineage.data.iterations.length > 0 && (
            <>
              <Text size="sm">Iterations (executions):</Text>
              <List size="sm" aria-label="Iterations">
                {lineage.data.iterations.map((i) => (
                  <List.Item key={i.n}>
                    {i.n}.{' '}
                    <Anchor component={Link} to={`/executions/${encodeURIComponent(i.execution_id)}`}>
                      {i.execution_id}
                    </Anchor>{' '}
                    ({i.reason.replace('_', ' ')}, {i.status})
                  </List.Item>
                ))}
              </List>
            </>
          )}
        </Stack>
      )}
    </section>
  );
}

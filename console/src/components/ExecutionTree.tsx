/** An execution and its sub-agent runs (GET /api/v1/executions/{id}/tree) as a nested list of links. */
import { Anchor, Group, Text } from '@mantine/core';
import { Link } from 'react-router';
import type { components } from '../api/schema';
import { agentName, type Option } from '../api/options';
import { ExecutionStatus, tokens } from './ExecutionParts';

const treeStyle = { margin: 0, paddingLeft: '1.25rem', overflowWrap: 'anywhere' } as const;

export type TreeNode = components['schemas']['ExecutionTreeNode'];

interface Props {
  node: TreeNode;
  agents: Option[] | undefined;
  /** The execution the page shows (marked, not linked). */
  currentId: string;
}

function NodeItem({ node, agents, currentId }: Props) {
  const e = node.execution;
  const name = agentName(agents, e.agentId);
  return (
    <li>
      <Group gap="xs" wrap="wrap" py={4}>
        {e.id === currentId ? (
          <Text fw={600} aria-current="page">
            {name}
          </Text>
        ) : (
          <Anchor component={Link} to={`/executions/${encodeURIComponent(e.id)}`}>
            {name}
          </Anchor>
        )}
        <ExecutionStatus status={e.status} />
        <Text size="xs" c="dimmed">
          {tokens(e.usage)}
        </Text>
      </Group>
      {node.children.length > 0 && (
        <ul style={treeStyle}>
          {node.children.map((c) => (
            <NodeItem key={c.execution.id} node={c} agents={agents} currentId={currentId} />
          ))}
        </ul>
      )}
    </li>
  );
}

export function ExecutionTree(props: Props) {
  return (
    <ul style={{ ...treeStyle, paddingLeft: 0, listStyle: 'none' }} aria-label="Execution tree">
      <NodeItem {...props} />
    </ul>
  );
}

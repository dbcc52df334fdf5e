/** A page, chat or path that does not exist for this session: nothing of it is shown. */
import { Button, Stack, Text, Title } from '@mantine/core';
import { Link } from 'react-router';

export function NotFound({ what = 'page' }: { what?: string }) {
  return (
    <Stack align="flex-start">
      <Title order={1}>Not found</Title>
      <Text>This {what} does not exist, or it is not in your organization.</Text>
      <Button component={Link} to="/chats" variant="light">
        Back to chats
      </Button>
    </Stack>
  );
}

export function NotFoundPage() {
  return <NotFound />;
}

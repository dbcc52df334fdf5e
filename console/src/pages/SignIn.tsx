/**
 * Sign in: a personal access token (`td_…`) is sent once to POST /api/session, which answers with an HttpOnly
 * cookie; the token leaves the page's memory with the form (never stored in localStorage, sessionStorage or a
 * cookie scripts can read). When the service has an identity provider for the console, "Sign in with SSO" sends
 * the browser through it (the service's /api/session/sso/start), which ends in the same cookie; a refusal comes
 * back here with `?sso_error=<reason>`.
 */
import { Alert, Button, Center, Divider, Paper, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { readSsoOffer, signIn, ssoErrorMessage } from '../api/session';
import { SESSION_KEY } from '../api/useSession';
import { nextPath } from '../lib/paths';

export function SignInPage() {
  const [token, setToken] = useState('');
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const sso = useQuery({ queryKey: ['session', 'sso'], queryFn: readSsoOffer, retry: false });
  const ssoError = params.get('sso_error');
  const ssoStart = sso.data?.startUrl
    ? `${sso.data.startUrl}?${new URLSearchParams({ next: nextPath(params.get('next')) }).toString()}`
    : null;
  const mutation = useMutation({
    mutationFn: signIn,
    onSuccess: (session) => {
      setToken('');
      queryClient.setQueryData(SESSION_KEY, session);
      void navigate(nextPath(params.get('next')), { replace: true });
    },
  });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    if (token.trim()) mutation.mutate(token.trim());
  };
  return (
    <Center mih="100vh" p="md" component="main">
      <Paper withBorder shadow="sm" p="lg" radius="md" w="100%" maw={420}>
        <form onSubmit={submit} noValidate>
          <Stack>
            <Title order={1} size="h2">
              Sign in
            </Title>
            <Text size="sm" c="dimmed">
              Paste a personal access token (<code>td_…</code>): the one <code>npm run admin bootstrap</code> printed,
              or one made under your profile.
            </Text>
            <PasswordInput
              label="Access token"
              value={token}
              onChange={(e) => setToken(e.currentTarget.value)}
              autoComplete="off"
              spellCheck={false}
              required
              data-autofocus
            />
            {mutation.isError && (
              <Alert color="red" role="alert" title="Not signed in">
                {mutation.error.message}
              </Alert>
            )}
            <Button type="submit" loading={mutation.isPending} disabled={!token.trim()}>
              Sign in
            </Button>
            {ssoError && (
              <Alert color="red" role="alert" title="Not signed in with SSO">
                {ssoErrorMessage(ssoError)}
              </Alert>
            )}
            {ssoStart && (
              <>
                <Divider label="or" labelPosition="center" />
                <Button component="a" href={ssoStart} variant="default">
                  Sign in with SSO
                </Button>
              </>
            )}
          </Stack>
        </form>
      </Paper>
    </Center>
  );
}

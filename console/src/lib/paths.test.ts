/** The console's paths (lib/paths.ts) and the error sentences (lib/errors.ts), safe Markdown (lib/htmlAsText.ts). */
import { errorMessage } from './errors';
import { htmlAsText } from './htmlAsText';
import { chatPath, nextPath } from './paths';

it('builds the chatUrl form the API gives agents', () => {
  expect(chatPath({ organizationId: 'org_1', spaceId: 'spc_2', chatId: 'chat_3' })).toBe(
    '/org_1/spaces/spc_2/chats/chat_3'
  );
  expect(chatPath({ organizationId: 'a/b', spaceId: 's', chatId: 'c' })).toBe('/a%2Fb/spaces/s/chats/c');
});

it('goes back only to a path of this console after signing in', () => {
  expect(nextPath('/org_1/spaces/s/chats/c')).toBe('/org_1/spaces/s/chats/c');
  expect(nextPath(null)).toBe('/chats');
  expect(nextPath('https://evil.example/')).toBe('/chats');
  expect(nextPath('//evil.example/')).toBe('/chats');
  expect(nextPath('/\\evil.example')).toBe('/chats');
  expect(nextPath('/sign-in?next=/x')).toBe('/chats');
});

it('reads the message of either error shape', () => {
  expect(errorMessage({ error: { code: 'not_found', message: 'Chat not found' } }, 404)).toBe('Chat not found');
  expect(errorMessage({ error: true, statusCode: 401, message: 'Invalid token' }, 401)).toBe('Invalid token');
  expect(errorMessage(undefined, 502)).toBe('The service answered 502');
});

it('turns raw HTML of Markdown into text', () => {
  const tree = {
    type: 'root',
    children: [
      { type: 'html', value: '<img src=x onerror=alert(1)>' },
      {
        type: 'paragraph',
        children: [
          { type: 'html', value: '<script>' },
          { type: 'text', value: 'x' },
        ],
      },
    ],
  };
  htmlAsText()(tree);
  expect(JSON.stringify(tree)).not.toContain('"html"');
  expect(tree.children[0]).toEqual({ type: 'text', value: '<img src=x onerror=alert(1)>' });
});

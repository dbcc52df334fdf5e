/** A reply rendered as Markdown, safely: raw HTML shown as text (htmlAsText), URLs through react-markdown's filter. */
import ReactMarkdown from 'react-markdown';
import { htmlAsText } from '../lib/htmlAsText';

const plugins = [htmlAsText];

export function Markdown({ text }: { text: string }) {
  return (
    <div className="markdown">
      <ReactMarkdown remarkPlugins={plugins}>{text}</ReactMarkdown>
    </div>
  );
}

/**
 * A remark plugin: raw HTML in Markdown (a model's `<img onerror>` or `<script>`) becomes plain text, shown as
 * written and never parsed as markup. react-markdown would otherwise drop it silently; nothing renders it as HTML
 * (no rehype-raw).
 */

interface MdNode {
  type: string;
  value?: string;
  children?: MdNode[];
}

function walk(node: MdNode): void {
  if (node.type === 'html') node.type = 'text';
  node.children?.forEach(walk);
}

/** @returns the transformer. */
export function htmlAsText(): (tree: MdNode) => void {
  return walk;
}

/**
 * A graph as `/assistants/{id}/graph` returns it (`{nodes: [{id, data}], edges: [{source, target,
 * conditional, data}]}`), laid out top to bottom by dagre and drawn by React Flow (pan, zoom).
 * With xray, a subgraph's nodes are named `<subgraph>:<node>`: they get their subgraph's colour and
 * a label with it. Loaded lazily: this module and its libraries are a chunk of their own.
 */
import dagre from "@dagrejs/dagre";
import { Background, Controls, type Edge, MarkerType, type Node, ReactFlow } from "@xyflow/react";
import { useMemo } from "react";

interface DrawableGraph {
  nodes: { id: string | number; name?: string; data?: unknown }[];
  edges: { source: string | number; target: string | number; conditional?: boolean; data?: unknown }[];
}

const WIDTH = 170;
const HEIGHT = 40;
const PALETTE = ["#e8f0fe", "#fdf0e0", "#e6f4ea", "#f3e8fd", "#fce8e6", "#e0f7fa"];

function layout(graph: DrawableGraph): { nodes: Node[]; edges: Edge[] } {
  const g = new dagre.graphlib.Graph();
  g.setGraph({ rankdir: "TB", nodesep: 30, ranksep: 50 });
  g.setDefaultEdgeLabel(() => ({}));
  for (const n of graph.nodes) g.setNode(String(n.id), { width: WIDTH, height: HEIGHT });
  for (const e of graph.edges) g.setEdge(String(e.source), String(e.target));
  dagre.layout(g);

  const namespaces = [...new Set(graph.nodes.map((n) => namespaceOf(String(n.id))))];
  const nodes: Node[] = graph.nodes.map((n) => {
    const id = String(n.id);
    const at = g.node(id);
    const ns = namespaceOf(id);
    const isEnd = id === "__start__" || id === "__end__";
    return {
      id,
      position: { x: at.x - WIDTH / 2, y: at.y - HEIGHT / 2 },
      data: { label: ns ? `${ns} › ${id.slice(ns.length + 1)}` : id },
      style: {
        width: WIDTH,
        background: isEnd ? "#f1f3f4" : PALETTE[namespaces.indexOf(ns) % PALETTE.length],
        borderRadius: isEnd ? 20 : 6,
        fontSize: 12,
      },
      draggable: true,
      connectable: false,
    };
  });
  const edges: Edge[] = graph.edges.map((e, i) => ({
    id: `${e.source}->${e.target}-${i}`,
    source: String(e.source),
    target: String(e.target),
    animated: !!e.conditional,
    style: e.conditional ? { strokeDasharray: "4 3" } : undefined,
    label: typeof e.data === "string" ? e.data : undefined,
    markerEnd: { type: MarkerType.ArrowClosed },
  }));
  return { nodes, edges };
}

const namespaceOf = (id: string) => (id.includes(":") ? id.slice(0, id.lastIndexOf(":")) : "");

export default function GraphView({ graph }: { graph: DrawableGraph }) {
  const { nodes, edges } = useMemo(() => layout(graph), [graph]);
  return (
    <div className="graph" data-testid="graph">
      <ReactFlow
        nodes={nodes}
        edges={edges}
        fitView
        nodesConnectable={false}
        proOptions={{ hideAttribution: true }}
      >
        <Background />
        <Controls showInteractive={false} />
      </ReactFlow>
    </div>
  );
}

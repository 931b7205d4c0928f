// An outside server written with the TypeScript SDK 2.x (@modelcontextprotocol/server, pinned in
// tests/peers.py and found in .peers/ by MCP_NB_PEERS), over stdio: one tool, prompt and resource
// for each way a call can fail. server-everything is written with the 1.x SDK, whose texts differ.
import { createRequire } from "node:module";
import path from "node:path";

const peers = createRequire(path.join(process.env.MCP_NB_PEERS, "package.json"));
const sdk = createRequire(peers.resolve("@modelcontextprotocol/server"));
const { McpServer } = sdk("@modelcontextprotocol/server");
const { StdioServerTransport } = sdk("@modelcontextprotocol/server/stdio");
const z = sdk("zod");

const text = (value) => ({ content: [{ type: "text", text: value }] });
const shop = new McpServer({ name: "ts-sdk-shop", version: "1.0.0" });

shop.registerTool("add", { inputSchema: z.object({ a: z.number(), b: z.number() }), _meta: { owner: "shop" } },
  async ({ a, b }) => text(String(a + b)));
shop.registerTool("boom", {}, async () => { throw new Error("secret broke"); });
shop.registerTool("flagged", {}, async () => ({ ...text("flagged by hand"), isError: true }));
shop.registerPrompt("greet", { argsSchema: z.object({ name: z.string() }) },
  async ({ name }) => ({ messages: [{ role: "user", content: { type: "text", text: `hi ${name}` } }] }));
shop.registerPrompt("broken", {}, async () => { throw new Error("inner"); });
shop.registerResource("fine", "shop://fine", {}, async (uri) => ({ contents: [{ uri: uri.href, text: "fine" }] }));
shop.registerResource("crash", "shop://crash", {}, async () => { throw new Error("secret"); });

await shop.connect(new StdioServerTransport());

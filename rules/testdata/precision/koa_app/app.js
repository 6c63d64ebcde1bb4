// A Koa application written the safe way (Quavon precision corpus).
import Koa from "koa";
import Router from "@koa/router";
import send from "koa-send";
import escape from "escape-html";
import knex from "knex";
import path from "node:path";

const app = new Koa();
const router = new Router();
const db = knex({ client: "pg", connection: process.env.DATABASE_URL });
const PUBLIC = path.resolve("public");
app.keys = [process.env.COOKIE_KEY_1, process.env.COOKIE_KEY_2];

router.get("/hello", async (ctx) => {
  ctx.body = `<p>Hello ${escape(ctx.query.name || "world")}</p>`;
});

router.get("/api/echo", async (ctx) => {
  ctx.body = { q: ctx.query.q };
});

router.get("/raw", async (ctx) => {
  ctx.type = "text/plain";
  ctx.body = ctx.query.text;
});

router.get("/users", async (ctx) => {
  ctx.body = await db("users").whereRaw("lower(email) = lower(?)", [ctx.query.email]).select("id", "name");
});

router.get("/static/:p", async (ctx) => {
  await send(ctx, ctx.params.p, { root: PUBLIC });
});

router.post("/login", async (ctx) => {
  const user = await login(String(ctx.request.body.email), String(ctx.request.body.password));
  if (!user) ctx.throw(401);
  ctx.cookies.set("session_id", await newSession(user), { httpOnly: true, secure: true, sameSite: "lax" });
  ctx.redirect("/");
});

app.use(router.routes()).use(router.allowedMethods());
export default app;

// An Express application written the safe way (Quavon precision corpus).
"use strict";
const crypto = require("crypto");
const fs = require("fs");
const path = require("path");
const { execFile } = require("child_process");
const express = require("express");
const session = require("express-session");
const helmet = require("helmet");
const cors = require("cors");
const escapeHtml = require("escape-html");
const jwt = require("jsonwebtoken");
const { Pool } = require("pg");
const _ = require("lodash");

const app = express();
const pool = new Pool({ connectionString: process.env.DATABASE_URL });
const FILES = path.resolve(process.env.FILES_DIR || "/srv/files");
const VIEWS = { home: "home", about: "about" };
const TARGETS = { home: "/", docs: "/docs" };
const ALLOWED_HOSTS = new Set(["images.example.com"]);
const JWT_SECRET = process.env.JWT_SECRET;

app.set("trust proxy", 1);
app.use(helmet());
app.use(express.json());
app.use(cors({ origin: ["https://app.example.com"], credentials: true }));
app.use(
  session({
    secret: process.env.SESSION_SECRET,
    resave: false,
    saveUninitialized: false,
    cookie: { secure: true, httpOnly: true, sameSite: "lax" },
  }),
);

app.get("/", (req, res) => res.render("home", { user: req.session.user }));

app.get("/hello", (req, res) => {
  res.send(`<p>Hello ${escapeHtml(req.query.name || "world")}</p>`);
});

app.get("/page", (req, res) => {
  res.render(VIEWS[req.query.p] || "home");
});

app.get("/api/items", async (req, res) => {
  const { rows } = await pool.query("SELECT id, name FROM items WHERE owner = $1 AND name ILIKE $2", [
    req.session.user,
    `%${req.query.q || ""}%`,
  ]);
  res.json(rows);
});

app.get("/api/items/:id", async (req, res) => {
  const id = Number.parseInt(req.params.id, 10);
  if (!Number.isInteger(id)) return res.sendStatus(400);
  const { rows } = await pool.query("SELECT * FROM items WHERE id = $1", [id]);
  res.json(rows[0] || null);
});

app.get("/count", (req, res) => {
  const n = Number(req.query.n) || 0;
  res.send(`<p>${n} items</p>`);
});

app.get("/raw", (req, res) => {
  res.type("text/plain").send(req.query.text);
});

app.get("/files/:name", (req, res) => {
  res.sendFile(req.params.name, { root: FILES });
});

app.get("/docs", async (req, res) => {
  const p = path.resolve(FILES, String(req.query.p || ""));
  if (!p.startsWith(FILES + path.sep)) return res.sendStatus(404);
  res.send(await fs.promises.readFile(p, "utf8"));
});

app.get("/report", (req, res) => {
  const name = path.basename(String(req.query.name || ""));
  fs.readFile(path.join(FILES, "reports", name), "utf8", (err, data) => {
    if (err) return res.sendStatus(404);
    res.type("text/plain").send(data);
  });
});

app.get("/proxy", async (req, res) => {
  const target = new URL(String(req.query.url || ""));
  if (!ALLOWED_HOSTS.has(target.hostname)) return res.sendStatus(400);
  const r = await fetch(target);
  res.type(r.headers.get("content-type") || "application/octet-stream").send(Buffer.from(await r.arrayBuffer()));
});

app.get("/profile", async (req, res) => {
  const r = await fetch(`https://api.github.com/users/${encodeURIComponent(req.query.user)}`);
  res.json(await r.json());
});

app.get("/go", (req, res) => {
  res.redirect(TARGETS[req.query.to] || "/");
});

app.get("/done", (req, res) => {
  const next = String(req.query.next || "/");
  if (!next.startsWith("/") || next.startsWith("//")) return res.redirect("/");
  res.redirect(next);
});

app.post("/login", async (req, res) => {
  const { username, password } = req.body;
  if (typeof username !== "string" || typeof password !== "string") return res.sendStatus(400);
  const user = await Users.findOne({ username, active: true });
  if (!user || !(await user.checkPassword(password))) return res.status(401).json({ error: "invalid" });
  const token = jwt.sign({ sub: user.id }, JWT_SECRET, { algorithm: "HS256", expiresIn: "1h" });
  res.cookie("auth_token", token, { secure: true, httpOnly: true, sameSite: "strict" });
  res.redirect(`/users/${user.id}`);
});

app.post("/logout", (req, res) => {
  res.cookie("auth_token", "", { maxAge: 0 });
  req.session.destroy(() => res.redirect("/"));
});

app.post("/convert", (req, res) => {
  const width = Number.parseInt(req.body.width, 10);
  execFile("convert", ["in.png", "-resize", String(width), "--", "out.png"], (err) => {
    res.sendStatus(err ? 500 : 204);
  });
});

app.post("/clone", (req, res) => {
  execFile("git", ["clone", "--", String(req.body.url), path.join("/tmp", crypto.randomUUID())], (err) =>
    res.sendStatus(err ? 500 : 204),
  );
});

app.post("/profile", async (req, res) => {
  const update = _.pick(req.body, ["name", "bio"]);
  await Users.updateOne({ _id: req.session.user }, { $set: update });
  res.sendStatus(204);
});

app.get("/verify", (req, res) => {
  try {
    const claims = jwt.verify(String(req.query.token), JWT_SECRET, { algorithms: ["HS256"] });
    res.json({ sub: claims.sub });
  } catch {
    res.sendStatus(401);
  }
});

app.get("/search", async (req, res) => {
  const q = _.escapeRegExp(String(req.query.q || ""));
  res.json(await Posts.find({ title: { $regex: new RegExp(q, "i") } }).limit(20));
});

app.post("/transfer", async (req, res) => {
  const amount = Number(req.body.amount);
  if (!Number.isFinite(amount) || amount <= 0) return res.sendStatus(400);
  await transfer(req.session.user, String(req.body.to), amount);
  res.sendStatus(204);
});

app.use((req, res) => {
  res.status(404).send("Cannot " + req.method + " " + req.url);
});

module.exports = app;

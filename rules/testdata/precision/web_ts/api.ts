// TypeScript server code written the safe way (Quavon precision corpus).
import { Request, Response, Router } from "express";
import { DataSource } from "typeorm";
import * as path from "node:path";
import { promises as fs } from "node:fs";
import escapeHtml from "escape-html";

const router = Router();
const BASE = path.resolve("/srv/docs");

export function registerRoutes(ds: DataSource): Router {
  router.get("/users", async (req: Request, res: Response) => {
    const name = String(req.query.name ?? "");
    const users = await ds
      .getRepository(User)
      .createQueryBuilder("u")
      .where("u.name = :name", { name })
      .orderBy("u.created", "DESC")
      .getMany();
    res.json(users);
  });

  router.get("/doc/:name", async (req: Request, res: Response) => {
    const file = path.resolve(BASE, req.params.name as string);
    if (!file.startsWith(BASE + path.sep)) {
      res.sendStatus(404);
      return;
    }
    res.type("text/plain").send(await fs.readFile(file, "utf8"));
  });

  router.get("/hi", (req: Request, res: Response) => {
    const who = escapeHtml(String(req.query.who ?? ""));
    res.send(`<p>Hi ${who}</p>`);
  });

  return router;
}

"""A FastAPI service written the safe way (Quavon precision corpus)."""
import html
import os
from pathlib import Path
from typing import Optional

import httpx
import jwt
from fastapi import Depends, FastAPI, HTTPException, Request, Response
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse
from fastapi.templating import Jinja2Templates
from sqlalchemy import select, text
from sqlalchemy.orm import Session

app = FastAPI()
app.add_middleware(CORSMiddleware, allow_origins=["https://app.example.com"], allow_credentials=True)
templates = Jinja2Templates(directory="templates")
FILES = Path("/srv/files").resolve()
SECRET = os.environ["JWT_SECRET"]
TARGETS = {"docs": "/docs", "home": "/"}
SORTABLE = {"name": "name", "created": "created_at"}


def get_db():
    ...


def current_user(request: Request) -> str:
    token = request.cookies.get("access_token", "")
    try:
        return jwt.decode(token, SECRET, algorithms=["HS256"])["sub"]
    except jwt.PyJWTError:
        raise HTTPException(status_code=401)


@app.get("/items/{item_id}")
def read_item(item_id: int, db: Session = Depends(get_db)):
    return db.execute(select(Item).where(Item.id == item_id)).scalar_one()


@app.get("/search")
def search(q: str = "", sort: Optional[str] = None, db: Session = Depends(get_db)):
    column = SORTABLE.get(sort or "", "name")
    rows = db.execute(text("SELECT id, name FROM items WHERE name LIKE :q ORDER BY " + column), {"q": f"%{q}%"})
    return [dict(r._mapping) for r in rows]


@app.get("/hello/{name}", response_class=HTMLResponse)
def hello(name: str):
    return HTMLResponse(f"<h1>Hello {html.escape(name)}</h1>")


@app.get("/page", response_class=HTMLResponse)
def page(request: Request, q: str = ""):
    return templates.TemplateResponse(request, "page.html", {"q": q})


@app.get("/echo")
def echo(msg: str):
    return Response(content=msg, media_type="text/plain")


@app.get("/me")
def me(user: str = Depends(current_user)):
    return HTMLResponse(f"<p>{html.escape(user)}</p>")


@app.get("/files/{name}")
def download(name: str):
    path = (FILES / name).resolve()
    if not path.is_relative_to(FILES):
        raise HTTPException(status_code=404)
    return FileResponse(path)


@app.get("/repos/{owner}")
async def repos(owner: str):
    async with httpx.AsyncClient() as client:
        r = await client.get(f"https://api.github.com/users/{owner}/repos")
    return r.json()


@app.get("/go/{name}")
def go(name: str):
    return RedirectResponse(TARGETS.get(name, "/"))


@app.get("/old")
def old(request: Request):
    return RedirectResponse(request.url_for("read_item", item_id=1))


@app.post("/login")
def login(response: Response, user: str = Depends(current_user)):
    token = jwt.encode({"sub": user}, SECRET, algorithm="HS256")
    response.set_cookie(key="access_token", value=token, secure=True, httponly=True)
    return {"ok": True}

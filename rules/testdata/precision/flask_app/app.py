"""A small Flask application written the safe way (Quavon precision corpus)."""
import math
import os
import re
import secrets
import sqlite3
import tarfile
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import requests
from flask import (Flask, abort, g, jsonify, make_response, redirect,
                   render_template, render_template_string, request,
                   send_from_directory, session, url_for)
from flask_wtf.csrf import CSRFProtect
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from werkzeug.utils import secure_filename

app = Flask(__name__)
app.config.update(
    SECRET_KEY=os.environ["FLASK_SECRET_KEY"],
    SESSION_COOKIE_SECURE=True,
    SESSION_COOKIE_HTTPONLY=True,
    SESSION_COOKIE_SAMESITE="Lax",
    WTF_CSRF_TIME_LIMIT=3600,
)
csrf = CSRFProtect(app)
UPLOADS = Path(os.environ.get("UPLOAD_DIR", "/srv/uploads")).resolve()
REPORTS = "/srv/reports"
SORTABLE = {"name": "name", "created": "created_at"}
ALLOWED_HOSTS = {"images.example.com", "cdn.example.com"}
mail_env = Environment(loader=FileSystemLoader("templates/mail"), autoescape=select_autoescape())


def db():
    if "db" not in g:
        g.db = sqlite3.connect(os.environ.get("DB_PATH", "app.db"))
    return g.db


@app.route("/")
def index():
    return render_template("index.html", user=session.get("user"))


@app.route("/search")
def search():
    q = request.args.get("q", "")
    sort = SORTABLE.get(request.args.get("sort"), "name")
    rows = db().execute(
        "SELECT id, name FROM items WHERE name LIKE ? ORDER BY " + sort,
        (f"%{q}%",),
    ).fetchall()
    return render_template("search.html", q=q, rows=rows)


@app.route("/hello")
def hello():
    name = request.args.get("name", "world")
    return f"<p>Hello, {escape(name)}!</p>"


@app.route("/user/<username>")
def profile(username):
    user = db().execute("SELECT * FROM users WHERE name = ?", (username,)).fetchone()
    if user is None:
        abort(404)
    return render_template("profile.html", user=user)


@app.route("/api/items/<int:item_id>")
def item(item_id):
    row = db().execute("SELECT id, name FROM items WHERE id = ?", (item_id,)).fetchone()
    return jsonify(id=row[0], name=row[1])


@app.post("/api/echo")
def echo():
    data = request.get_json(silent=True) or {}
    return jsonify(received=data)


@app.route("/page")
def page():
    n = request.args.get("n", 1, type=int)
    return f"<p>Page {n}</p>"


@app.route("/color")
def color():
    c = request.args.get("c", "red")
    if c not in {"red", "green", "blue"}:
        abort(400)
    return f"<p style='color:{c}'>ok</p>"


@app.route("/text")
def text():
    return make_response(request.args.get("q", ""), 200, {"Content-Type": "text/plain"})


@app.route("/badge")
def badge():
    label = request.args.get("label", "")
    return Markup("<span class='badge'>{}</span>").format(label)


@app.route("/greeting")
def greeting():
    return render_template_string("<p>Hello {{ name }}</p>", name=request.args.get("name"))


@app.route("/reports/<name>")
def report(name):
    safe = secure_filename(name)
    with open(os.path.join(REPORTS, safe), encoding="utf-8") as f:
        return render_template("report.html", body=f.read())


@app.route("/docs")
def docs():
    path = (UPLOADS / request.args.get("p", "")).resolve()
    if not path.is_relative_to(UPLOADS):
        abort(404)
    return path.read_text()


@app.route("/download/<path:filename>")
def download(filename):
    return send_from_directory(UPLOADS, filename)


@app.post("/upload")
def upload():
    f = request.files["file"]
    name = f"{uuid.uuid4().hex}{Path(secure_filename(f.filename)).suffix}"
    f.save(os.path.join(UPLOADS, name))
    return jsonify(name=name)


@app.post("/import")
def import_archive():
    archive = request.files["archive"]
    target = UPLOADS / uuid.uuid4().hex
    with tarfile.open(fileobj=archive.stream, mode="r|*") as tar:
        tar.extractall(target, filter="data")
    return jsonify(ok=True)


@app.route("/proxy")
def proxy():
    url = request.args.get("url", "")
    if urlsplit(url).hostname not in ALLOWED_HOSTS:
        abort(400)
    return requests.get(url, timeout=5).content


@app.route("/weather")
def weather():
    city = request.args.get("city", "")
    r = requests.get("https://api.weather.example/v1", params={"q": city}, timeout=5)
    return jsonify(r.json())


@app.post("/login")
def login():
    user = authenticate(request.form["username"], request.form["password"])
    if user is None:
        return render_template("login.html", error="Invalid credentials"), 401
    session["user"] = user.id
    target = request.args.get("next", "")
    if urlsplit(target).netloc or not target.startswith("/"):
        target = url_for("index")
    resp = make_response(redirect(target))
    resp.set_cookie("remember_token", make_token(user), secure=True, httponly=True, samesite="Lax")
    return resp


@app.route("/logout")
def logout():
    session.clear()
    resp = make_response(redirect(url_for("index")))
    resp.set_cookie("remember_token", "", max_age=0)
    return resp


@app.route("/old")
def old():
    return redirect(url_for("index"), code=301)


@app.post("/transfer")
def transfer():
    amount = float(request.form["amount"])
    if not math.isfinite(amount) or amount <= 0:
        abort(400)
    move_money(session["user"], request.form["to"], amount)
    return redirect(url_for("index"))


@app.route("/grep")
def grep():
    needle = re.escape(request.args.get("q", ""))
    lines = [line for line in LOG_LINES if re.search(needle, line)]
    return jsonify(lines=lines)


def send_welcome(user):
    body = mail_env.get_template("welcome.html").render(user=user)
    deliver(user.email, body)


def authenticate(username, password):
    row = db().execute("SELECT id, hash FROM users WHERE name = ?", (username,)).fetchone()
    return row and check_hash(row[1], password) and User(row[0])


def make_token(user):
    return secrets.token_urlsafe(32)


if __name__ == "__main__":
    app.run(debug=os.environ.get("FLASK_DEBUG") == "1")

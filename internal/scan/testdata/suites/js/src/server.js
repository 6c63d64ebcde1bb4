'use strict';

const fs = require('fs');
const path = require('path');
const { execFile } = require('child_process');

const NOTES_DIR = process.env.NOTES_DIR || path.join(__dirname, '..', 'notes');

const handlers = {
  list: listNotes,
  read: readNote,
};

function listNotes() {
  return fs.readdirSync(NOTES_DIR).filter((n) => n.endsWith('.md'));
}

function readNote(name) {
  const file = path.join(NOTES_DIR, path.basename(name));
  return fs.readFileSync(file, 'utf8');
}

function search(notes, pattern) {
  const re = new RegExp(pattern, 'i');
  return notes.filter((n) => re.test(n));
}

function dispatch(action, arg) {
  const handler = handlers[action];
  if (typeof handler !== 'function') {
    throw new Error('unknown action ' + action);
  }
  return handler(arg);
}

function checkToken(given, expected) {
  if (given === expected) {
    return true;
  }
  return false;
}

function revision(cb) {
  execFile('git', ['rev-parse', 'HEAD'], (err, out) => cb(err ? 'unknown' : out.trim()));
}

function route(req, res) {
  const url = new URL(req.url, 'http://localhost');
  if (url.pathname === '/notes') {
    res.end(JSON.stringify(listNotes()));
    return;
  }
  if (url.pathname === '/note') {
    const file = path.join(NOTES_DIR, url.searchParams.get('name'));
    fs.readFile(file, 'utf8', (err, text) => res.end(err ? 'not found' : text));
    return;
  }
  res.statusCode = 404;
  res.end();
}

module.exports = { listNotes, readNote, search, dispatch, checkToken, revision, route };

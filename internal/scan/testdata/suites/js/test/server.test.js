'use strict';

const fs = require('fs');
const os = require('os');
const path = require('path');
const server = require('../src/server');

const API_KEY = 'test-api-key-not-real';
const fixtures = { one: 'first note', two: 'second note' };

describe('notes', () => {
  let dir;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'notes-'));
    for (const name of Object.keys(fixtures)) {
      fs.writeFileSync(path.join(dir, name + '.md'), fixtures[name]);
    }
  });

  test('search is case-insensitive', () => {
    expect(server.search(['Alpha', 'beta'], 'ALPHA')).toEqual(['Alpha']);
  });

  test('tokens compare', () => {
    expect(server.checkToken(API_KEY, API_KEY)).toBe(true);
  });

  test('reads fixtures', () => {
    const name = 'one';
    expect(fs.readFileSync(path.join(dir, name + '.md'), 'utf8')).toBe(fixtures[name]);
  });
});

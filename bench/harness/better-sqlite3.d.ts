// The slice of better-sqlite3 the SQLite ceiling uses; the package ships no types and
// @types/better-sqlite3 is not a dependency.
declare module 'better-sqlite3' {
  interface Statement {
    run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  }
  class Database {
    constructor(filename: string);
    pragma(source: string): unknown;
    exec(source: string): this;
    prepare(source: string): Statement;
    close(): this;
  }
  export default Database;
}

enum Color { Red, Green }
abstract class Base<T extends object> { abstract get(): T; }
namespace NS { export const x = 1; }
declare module "foo" { export function f(): void; }
const n = <number>someValue;
const cfg = { a: 1 } satisfies Record<string, number>;
function dec(t: any) {}
@dec class C { accessor v = 1; constructor(private readonly s: string) {} }
export type U = keyof typeof cfg;

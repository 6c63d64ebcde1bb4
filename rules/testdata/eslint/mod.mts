export const f = (x: string): string => x;

import React from "react";
const id = <T,>(x: T) => x;
export const Box = ({ n }: { n: number }) => <div>{id(n) as number}</div>;

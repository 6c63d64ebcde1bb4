import React from "react";
export function Hello({ name }) { return <p className="x">Hello {name}<>frag</></p>; }

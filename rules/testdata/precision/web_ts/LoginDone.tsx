// A React component written the safe way (Quavon precision corpus).
import React, { useEffect, useState } from "react";
import DOMPurify from "dompurify";

export function LoginDone(): JSX.Element {
  useEffect(() => {
    const next = new URLSearchParams(window.location.search).get("next") ?? "/";
    const target = new URL(next, window.location.origin);
    if (target.origin === window.location.origin) {
      window.location.assign(target.pathname + target.search);
    } else {
      window.location.assign("/");
    }
  }, []);
  return <p>Redirecting…</p>;
}

export function Comment({ html }: { html: string }): JSX.Element {
  return <div dangerouslySetInnerHTML={{ __html: DOMPurify.sanitize(html) }} />;
}

export function Embed({ parentOrigin }: { parentOrigin: string }): JSX.Element {
  const [state, setState] = useState<unknown>(null);
  useEffect(() => {
    const onMessage = (event: MessageEvent) => {
      if (event.origin !== parentOrigin) return;
      setState(event.data);
    };
    window.addEventListener("message", (event) => {
      if (event.origin !== parentOrigin) return;
      onMessage(event);
    });
  }, [parentOrigin]);
  return <pre>{JSON.stringify(state)}</pre>;
}

/**
 * `fetch` for the streamable HTTP transport with a bound on one answer (a POST's body, JSON or
 * its SSE stream): past `maxBytes` the body errors, so a hostile server cannot make the host
 * hold more than that for one call. The standing GET stream (server notifications) is not bounded
 * in total: it is read event by event.
 */
export function boundedFetch(maxBytes: number): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    if (response.body === null || (init?.method ?? 'GET').toUpperCase() !== 'POST') return response;
    let seen = 0;
    const body = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          seen += chunk.byteLength;
          if (seen > maxBytes) controller.error(new Error(`the answer passed ${maxBytes} bytes`));
          else controller.enqueue(chunk);
        },
      }),
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

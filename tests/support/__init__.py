"""Code the tests share: servers (Streamlit, HAProxy, redis) they start, the websocket client, AppTest and browser
helpers, tiny checkpoints, and `wait.until`. Test modules import from here, never from each other or from
benchmarks/ (benchmarks import the servers and the client from here: one copy of each)."""

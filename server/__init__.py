"""The app server's own runtime, beside Streamlit's: what every user of one process shares (the training slots, the
byte ledger of users' runs, heap collection), the class's event route, housekeeping, torch's threads and the
allocator. Started once per process from app.py's `st.App` (its routes and lifespan); pages and `ui` call only
`server.events` (HUB, and the route's PATH and process EPOCH for the listener), `server.housekeeping.note_run`,
`server.threads.fit_torch_threads`, `server.heap.collect_garbage` (the caches) and `server.slots.SLOTS` with
`server.ledger.MEMORY` (handed to every run by `ui.runs.shared`)."""

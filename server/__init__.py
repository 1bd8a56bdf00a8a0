"""The app server's own runtime, beside Streamlit's: the class's event route, housekeeping, torch's threads and the
allocator. Started once per process from app.py's `st.App` (its routes and lifespan); pages and `ui` call only
`server.events` (HUB, and the route's PATH and process EPOCH for the listener), `server.housekeeping.note_run` and
`server.threads.fit_torch_threads`."""

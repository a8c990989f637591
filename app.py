"""perfledger's server: `streamlit run app.py` serves the dashboard (dashboard.py, the frame and router) with one
route of perfledger's own beside Streamlit's, the upload route (ingest.upload_route), which writes an uploaded
file to disk as it arrives instead of holding it in the server's memory."""

import streamlit as st

from ingest import upload_route

app = st.App("dashboard.py", routes=upload_route.routes())

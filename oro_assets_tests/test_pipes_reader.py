"""The training steps' Pipes reader parses a message only once its line is complete."""

from __future__ import annotations

import json
import threading
import time

from oro_assets.defs.pipes_reader import WholeLineTempFileMessageReader, whole_lines
from oro_assets.defs.resources import resources_from_settings
from oro_assets.settings import load_settings


def test_a_line_cut_mid_write_is_read_whole(tmp_path):
    path = tmp_path / "messages"
    path.write_text("")
    done = threading.Event()
    message = json.dumps({"method": "report_custom_message", "params": {"payload": {"path": "/ck/x"}}})

    def writer() -> None:
        with open(path, "a", encoding="utf-8") as f:
            f.write('{"method": "log", "params": {"message": "step=1"}}\n')
            f.flush()
            f.write(message[:40])  # the training process is descheduled mid-line
            f.flush()
            time.sleep(0.3)
            f.write(message[40:] + "\n")
            f.flush()
            f.write('{"method": "closed", "params": {}}')  # the last line, closed without a newline
        done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    lines = [json.loads(line) for line in whole_lines(str(path), done.is_set, poll_s=0.005)]
    thread.join()
    assert [m["method"] for m in lines] == ["log", "report_custom_message", "closed"]
    assert lines[1]["params"]["payload"]["path"] == "/ck/x"


def test_the_training_steps_use_it(data_dir):
    client = resources_from_settings(load_settings())["pipes_subprocess_client"]
    assert isinstance(client.message_reader, WholeLineTempFileMessageReader)

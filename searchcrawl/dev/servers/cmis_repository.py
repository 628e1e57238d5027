"""A real CMIS repository for tests: Apache Chemistry's OpenCMIS InMemory server on Jetty, both
from Maven Central (searchcrawl/dev/cmis_runner.py), on 127.0.0.1; one a test worker.

What tests may rely on: ``url`` (the browser binding), ``CRAWLER``, and, as a user of the
repository would, ``folder(path)``, ``document(folder, name, text)``, ``write(id, text)``,
``restrict(id, readers)`` (only these users, and the crawler, may read), ``open_to_all(id)``,
``delete(id)``, ``move(id, source, target)``; ``can_read(user, id)``: the repository's own answer
to that user asking for the content (the oracle). It takes any password: users are names.
"""

from __future__ import annotations

from typing import Any

import requests

CRAWLER = "crawler"
ADMIN = ("admin", "admin")


class CmisRepository:
    def __init__(self, url: str) -> None:
        self.url = url
        self.root = url + "/A1/root"

    def _post(self, url: str, data: dict[str, str], files: Any = None) -> dict[str, Any]:
        answer = requests.post(url, data={**data, "succinct": "true"}, files=files, auth=ADMIN, timeout=60)
        assert answer.status_code in (200, 201), (answer.status_code, answer.text[:500])
        result: dict[str, Any] = answer.json() if answer.content else {}  # a delete answers nothing
        return result

    def folder(self, path: str) -> str:
        parent, _, name = path.rstrip("/").rpartition("/")
        made = self._post(
            self.root + parent,
            {
                "cmisaction": "createFolder",
                "propertyId[0]": "cmis:objectTypeId",
                "propertyValue[0]": "cmis:folder",
                "propertyId[1]": "cmis:name",
                "propertyValue[1]": name,
            },
        )
        return str(made["succinctProperties"]["cmis:objectId"])

    def document(self, folder: str, name: str, text: str) -> str:
        made = self._post(
            self.root + folder,
            {
                "cmisaction": "createDocument",
                "propertyId[0]": "cmis:objectTypeId",
                "propertyValue[0]": "cmis:document",
                "propertyId[1]": "cmis:name",
                "propertyValue[1]": name,
            },
            files={"content": (name, text.encode(), "text/plain")},
        )
        return str(made["succinctProperties"]["cmis:objectId"])

    def write(self, object_id: str, text: str) -> None:
        self._post(
            self.root,
            {"cmisaction": "setContent", "objectId": object_id},
            files={"content": ("x.txt", text.encode(), "text/plain")},
        )

    def acl(self, object_id: str) -> list[dict[str, Any]]:
        answer = requests.get(self.root, params={"objectId": object_id, "cmisselector": "acl"}, auth=(CRAWLER, "x"), timeout=60)
        aces: list[dict[str, Any]] = answer.json()["aces"]
        return aces

    def restrict(self, object_id: str, readers: list[str]) -> None:
        """Only ``readers`` (and the crawler, and the administrator who changes it) may read it:
        every other entry taken away, in one change whose removals and additions do not overlap
        (the server may apply either first)."""
        wanted = {("admin", "cmis:all"), (CRAWLER, "cmis:read"), *((reader, "cmis:read") for reader in readers)}
        held = {(ace["principal"]["principalId"], permission) for ace in self.acl(object_id) for permission in ace["permissions"]}
        data = {"cmisaction": "applyACL", "objectId": object_id, "ACLPropagation": "objectonly"}
        for number, (principal, permission) in enumerate(sorted(held - wanted)):
            data[f"removeACEPrincipal[{number}]"] = principal
            data[f"removeACEPermission[{number}][0]"] = permission
        for number, (principal, permission) in enumerate(sorted(wanted - held)):
            data[f"addACEPrincipal[{number}]"] = principal
            data[f"addACEPermission[{number}][0]"] = permission
        self._post(self.root, data)

    def open_to_all(self, object_id: str) -> None:
        self._post(
            self.root,
            {
                "cmisaction": "applyACL",
                "objectId": object_id,
                "addACEPrincipal[0]": "anyone",
                "addACEPermission[0][0]": "cmis:read",
            },
        )

    def delete(self, object_id: str) -> None:
        self._post(self.root, {"cmisaction": "delete", "objectId": object_id, "allVersions": "true"})

    def move(self, object_id: str, source: str, target: str) -> None:
        self._post(self.root, {"cmisaction": "move", "objectId": object_id, "sourceFolderId": source, "targetFolderId": target})

    def can_read(self, user: str, object_id: str) -> bool:
        answer = requests.get(self.root, params={"objectId": object_id, "cmisselector": "content"}, auth=(user, "x"), timeout=60)
        assert answer.status_code in (200, 403, 404), (answer.status_code, answer.text[:300])
        return answer.status_code == 200

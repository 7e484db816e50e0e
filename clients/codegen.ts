// Generates TypeScript types for operations.graphql from the running
// server's introspection, as a frontend project would.
import type { CodegenConfig } from "@graphql-codegen/cli";

const config: CodegenConfig = {
  schema: process.env.SCHEMA_URL ?? "http://localhost:8080/graphql",
  documents: ["operations.graphql"],
  generates: {
    "generated/graphql.ts": {
      plugins: ["typescript", "typescript-operations"],
      config: { scalars: { Time: "string", ID: "string" }, enumsAsTypes: true },
    },
  },
};
export default config;

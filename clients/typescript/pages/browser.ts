// The bundle conveyor's own pages load (`/assets/conveyor-client.js`): the package as a
// global, `window.Conveyor`, for pages without a build step of their own.
export * from "../src/index.js";

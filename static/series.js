// The series page: its plot's points in their lanes' colours.
import { paintSwatches } from "./colours.js";

paintSwatches();
